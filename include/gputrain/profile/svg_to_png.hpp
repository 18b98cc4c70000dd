#pragma once
// Charts are written as SVG; a .png is the same SVG rendered by librsvg (loaded at run time only
// when asked, so nothing links GLib or cairo: the Debian package librsvg2-2 provides it).

#include <string>

namespace gputrain::profile {

/// Renders `svg` to a PNG file at `scale` x its size. Throws EnvironmentError when librsvg is not
/// installed (naming the package), Error when it cannot render or write.
void write_svg_as_png(const std::string& svg, const std::string& path, double scale = 2.0);

/// Whether write_svg_as_png can work here (librsvg found), so a long job can refuse up front.
bool can_write_png();

}  // namespace gputrain::profile

#include "gputrain/profile/svg_to_png.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <regex>

#include "gputrain/core/error.hpp"

namespace gputrain::profile {
namespace {

// The few C entry points used, with their documented signatures (GLib/cairo types as opaque
// pointers; RsvgRectangle and GError's layout are part of those libraries' stable ABI).
struct RsvgRectangle {
  double x, y, width, height;
};
struct GError {
  std::uint32_t domain;
  int code;
  char* message;
};

struct Rsvg {
  void* rsvg = nullptr;
  void* cairo = nullptr;
  void* (*handle_new_from_data)(const std::uint8_t*, std::size_t, GError**) = nullptr;
  int (*render_document)(void*, void*, const RsvgRectangle*, GError**) = nullptr;
  void* (*image_surface_create)(int, int, int) = nullptr;
  void* (*create)(void*) = nullptr;
  int (*write_to_png)(void*, const char*) = nullptr;
  void (*destroy)(void*) = nullptr;
  void (*surface_destroy)(void*) = nullptr;
  void (*object_unref)(void*) = nullptr;
  void (*error_free)(GError*) = nullptr;
};

template <typename F>
void bind(void* library, F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(library, name));
}

const Rsvg& load() {
  static const Rsvg api = [] {
    Rsvg r;
    r.rsvg = dlopen("librsvg-2.so.2", RTLD_NOW | RTLD_LOCAL);
    r.cairo = r.rsvg ? dlopen("libcairo.so.2", RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!r.rsvg || !r.cairo) return r;
    bind(r.rsvg, r.handle_new_from_data, "rsvg_handle_new_from_data");
    bind(r.rsvg, r.render_document, "rsvg_handle_render_document");
    bind(r.rsvg, r.object_unref, "g_object_unref");
    bind(r.rsvg, r.error_free, "g_error_free");
    bind(r.cairo, r.image_surface_create, "cairo_image_surface_create");
    bind(r.cairo, r.create, "cairo_create");
    bind(r.cairo, r.write_to_png, "cairo_surface_write_to_png");
    bind(r.cairo, r.destroy, "cairo_destroy");
    bind(r.cairo, r.surface_destroy, "cairo_surface_destroy");
    return r;
  }();
  return api;
}

double attribute(const std::string& svg, const char* name) {
  std::smatch m;
  if (std::regex_search(svg, m, std::regex(std::string("<svg[^>]*\\s") + name + "=\"([0-9.]+)\""))) return std::stod(m[1]);
  return 0;
}

}  // namespace

bool can_write_png() {
  const auto& r = load();
  return r.handle_new_from_data && r.render_document && r.image_surface_create && r.create && r.write_to_png && r.destroy &&
         r.surface_destroy && r.object_unref && r.error_free;
}

void write_svg_as_png(const std::string& svg, const std::string& path, double scale) {
  const auto& r = load();
  if (!can_write_png())
    throw EnvironmentError("writing a PNG needs librsvg (librsvg-2.so.2 with cairo), which is not installed",
                           "apt-get install librsvg2-2, or write the chart as .svg");
  const double width = attribute(svg, "width"), height = attribute(svg, "height");
  if (width <= 0 || height <= 0) throw Error("the chart has no width and height", "this is a bug in gputrain: please report it");
  GError* error = nullptr;
  void* handle = r.handle_new_from_data(reinterpret_cast<const std::uint8_t*>(svg.data()), svg.size(), &error);
  const auto fail = [&](const std::string& what) {
    const std::string why = error && error->message ? error->message : "no reason given";
    if (error) r.error_free(error);
    return Error(what + ": " + why, "write the chart as .svg instead");
  };
  if (!handle) throw fail("librsvg cannot read the chart");
  const int w = static_cast<int>(width * scale), h = static_cast<int>(height * scale);
  void* surface = r.image_surface_create(/*CAIRO_FORMAT_ARGB32*/ 0, w, h);
  void* cr = r.create(surface);
  const RsvgRectangle viewport{0, 0, static_cast<double>(w), static_cast<double>(h)};
  const bool rendered = r.render_document(handle, cr, &viewport, &error) != 0;
  const int status = rendered ? r.write_to_png(surface, path.c_str()) : 0;
  r.destroy(cr);
  r.surface_destroy(surface);
  r.object_unref(handle);
  if (!rendered) throw fail("librsvg cannot render the chart");
  if (status != 0)
    throw Error("cannot write '" + path + "' (cairo status " + std::to_string(status) + ")",
                "check that its folder exists and is writable");
}

}  // namespace gputrain::profile

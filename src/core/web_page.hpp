#pragma once
// Web pages where something else was expected: a proxy's or sign-in page in front of MLflow, or a
// download that saved the page around a file (a "blob" link, a sign-in, a 404) under its name.

#include <string>
#include <string_view>

namespace gputrain::core {

/// Whether `text` starts as a web page, by its markup in the first 300 bytes (servers label plain
/// text as HTML, and HTML as text, so the label is not asked).
bool looks_like_web_page(std::string_view text);

/// A web page's title, or the start of its text with the markup left out; at most 160 characters.
std::string page_gist(std::string_view page);

}  // namespace gputrain::core

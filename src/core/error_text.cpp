#include "gputrain/core/error_text.hpp"

#include <algorithm>

namespace gputrain::core {

std::string without_backtrace(const std::string& what) {
  auto text = what.substr(0, std::min(what.find("\nException raised from "), what.find("\nframe #0")));
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

std::string without_miniz_advice(const std::string& reader_message) {
  return reader_message.substr(0, reader_message.find(". This is an internal miniz error"));
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace gputrain::core

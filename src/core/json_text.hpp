#pragma once
// JSON as text for files and stdout. A string that is not UTF-8 (a path typed on a Latin-1
// system) would make nlohmann's dump throw, after the work it records was done: its bad bytes
// become U+FFFD instead. Names from data files are made UTF-8 where they are read.

#include <string>

namespace gputrain::core {

/// `json.dump(indent)`, with bytes that are not UTF-8 written as U+FFFD.
template <class Json>
std::string json_text(const Json& json, int indent = -1) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gputrain::core

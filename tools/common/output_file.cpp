#include "output_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gputrain/core/printable.hpp"
#include "text_options.hpp"

namespace gputrain::tools {

namespace {

// "" when `path` is not a file, is empty, or starts as `kind` does; else the first line's start.
std::string start_of_other_file(const std::string& path, const OutputKind& kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string head(256, '\0');
  head.resize(static_cast<std::size_t>(in.read(head.data(), static_cast<std::streamsize>(head.size())).gcount()));
  const auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  for (const auto& begin : kind.starts)
    if (head.compare(start, begin.size(), begin) == 0) return "";
  return head.substr(start, std::min(head.find('\n', start), start + 60) - start);
}

}  // namespace

CLI::Validator output_file(const std::string& example_name, const OutputKind& kind) {
  return CLI::Validator(
      [example_name, kind](std::string& value) -> std::string {
        if (value.empty()) return empty_value_message("a file name, e.g. " + example_name);
        // `--junit --json`: the option's value left out, the next flag taken as the file's name.
        if (value.rfind('-', 0) == 0)
          return "'" + value + "' is an option, not a file: give a file name, e.g. " + example_name + " (a file named so: ./" + value + ")";
        std::error_code ec;
        if (!std::filesystem::is_directory(value, ec)) {
          const auto other = start_of_other_file(value, kind);
          if (other.empty()) return "";
          return "'" + value + "' is a file that is not " + kind.what + " (it starts " + core::quoted(other, 60) + "), which writing " +
                 kind.what + " there would replace: give the name of a new file, e.g. " + example_name;
        }
        return "'" + value + "' is a folder: give a file in it, e.g. " + (std::filesystem::path(value) / example_name).string();
      },
      "");
}

}  // namespace gputrain::tools

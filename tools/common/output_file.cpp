#include "output_file.hpp"

#include <filesystem>

#include "text_options.hpp"

namespace gputrain::tools {

CLI::Validator output_file(const std::string& example_name) {
  return CLI::Validator(
      [example_name](std::string& value) -> std::string {
        if (value.empty()) return empty_value_message("a file name, e.g. " + example_name);
        // `--junit --json`: the option's value left out, the next flag taken as the file's name.
        if (value.rfind('-', 0) == 0)
          return "'" + value + "' is an option, not a file: give a file name, e.g. " + example_name + " (a file named so: ./" + value + ")";
        std::error_code ec;
        if (!std::filesystem::is_directory(value, ec)) return "";
        return "'" + value + "' is a folder: give a file in it, e.g. " + (std::filesystem::path(value) / example_name).string();
      },
      "");
}

}  // namespace gputrain::tools

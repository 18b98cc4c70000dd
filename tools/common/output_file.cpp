#include "output_file.hpp"

#include <filesystem>

namespace gputrain::tools {

CLI::Validator output_file(const std::string& example_name) {
  return CLI::Validator(
      [example_name](std::string& value) -> std::string {
        std::error_code ec;
        if (!std::filesystem::is_directory(value, ec)) return "";
        return "'" + value + "' is a folder: give a file in it, e.g. " + (std::filesystem::path(value) / example_name).string();
      },
      "");
}

}  // namespace gputrain::tools

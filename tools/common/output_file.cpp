#include "output_file.hpp"

#include <filesystem>

#include "gputrain/core/write_error.hpp"

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

void refuse_unwritable(const std::string& path, const std::string& option) {
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) core::refuse_unmakeable_folder(folder.string(), option, /*for_a_file=*/true);
}

}  // namespace gputrain::tools

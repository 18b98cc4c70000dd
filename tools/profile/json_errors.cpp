// --json's promise holds on failure too: the error, as JSON, on stdout.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "modes.hpp"

namespace gputrain::tools::profile {
namespace {

void print_error(const char* schema, const std::string& message, const std::string& fix, ExitCode code) {
  const nlohmann::json out = {{"schema", schema}, {"error", message}, {"fix", fix}, {"exit_code", static_cast<int>(code)}};
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
}

}  // namespace

const char* json_schema(bool step_mode, bool memory_mode, bool batch_mode) {
  if (step_mode) return "gputrain.profile.step/1";
  if (memory_mode) return "gputrain.profile.memory/1";
  return batch_mode ? "gputrain.profile.batch/1" : "gputrain.profile.loader/1";
}

int with_json_errors(const char* schema, const std::function<int()>& profile) {
  try {
    return profile();
  } catch (const Error& e) {
    print_error(schema, e.what(), e.remedy(), e.exit_code());
    throw;
  } catch (const std::filesystem::filesystem_error& e) {
    print_error(schema, core::message_for_filesystem_error(e.path1().string(), e.path2().string(), e.code()),
                core::fix_for_filesystem_error(e.path1().string(), e.code()), ExitCode::failure);
    throw;
  } catch (const std::exception& e) {
    print_error(schema, core::message_for_unexplained(e), core::fix_for_unexplained(e), ExitCode::failure);
    throw;
  }
}

}  // namespace gputrain::tools::profile

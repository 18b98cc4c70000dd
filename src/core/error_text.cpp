#include "gputrain/core/error_text.hpp"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "core/resource_limit.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::core {

std::string without_backtrace(const std::string& what) {
  auto text = what.substr(0, std::min(what.find("\nException raised from "), what.find("\nframe #0")));
  text.erase(text.find_last_not_of(" \n") + 1);
  return text;
}

std::string without_miniz_advice(const std::string& reader_message) {
  return reader_message.substr(0, reader_message.find(". This is an internal miniz error"));
}

namespace {
bool cpu_allocation_failed(const std::string& what) { return what.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos; }
}  // namespace

std::optional<std::uint64_t> failed_cpu_allocation_bytes(const std::string& what) {
  const std::string tried = "you tried to allocate ";
  const auto at = what.find(tried);
  if (!cpu_allocation_failed(what) || at == std::string::npos) return std::nullopt;
  return std::strtoull(what.c_str() + at + tried.size(), nullptr, 10);
}

std::string message_for_unexplained(const std::string& what) {
  const auto text = without_backtrace(what);
  const auto bytes = failed_cpu_allocation_bytes(text);
  if (!bytes) return text;
  return "out of host memory: an allocation of " + format_bytes(*bytes) +
         " in RAM failed (LibTorch's CPU allocator: " + text.substr(text.find("can't allocate memory")) + ")";
}

std::string fix_for_unexplained(const std::string& what) {
  // LibTorch's allocators: "CUDA out of memory. Tried to allocate ...", the CPU cap's own, and
  // malloc's failure in the CPU allocator.
  if (what.find("out of memory") != std::string::npos || cpu_allocation_failed(what))
    return "allow more memory (device.max_memory, or --max-memory), or make what must fit smaller: the model, the batch "
           "(train.batch_size) or the data";
  return "";
}

namespace {
// std::thread's failure to start one: pthread_create's EAGAIN.
bool thread_refused(const std::exception& error) {
  const auto* system = dynamic_cast<const std::system_error*>(&error);
  return system && system->code() == std::errc::resource_unavailable_try_again;
}
}  // namespace

std::string message_for_unexplained(const std::exception& error) {
  if (thread_refused(error)) return std::string("the system would not start another thread: ") + error.what();
  return message_for_unexplained(std::string(error.what()));
}

std::string fix_for_unexplained(const std::exception& error) {
  if (!thread_refused(error)) return fix_for_unexplained(std::string(error.what()));
  const auto limit = soft_limit(RLIMIT_NPROC);
  const std::string now = limit ? " (" + std::to_string(*limit) + " now)" : "";
  return "this user or container runs as many processes and threads as it may: raise the shell's `ulimit -u`" + now +
         " or the container's limit (`docker run --pids-limit`), or start fewer threads (data.num_workers, OMP_NUM_THREADS)";
}

std::string message_for_filesystem_error(const std::string& path1, const std::string& path2, std::error_code code) {
  if (path1.empty()) return code.message();
  return "cannot use '" + path1 + "'" + (path2.empty() ? "" : " and '" + path2 + "'") + ": " + code.message();
}

std::string fix_for_filesystem_error(const std::string& path1, std::error_code code) {
  if (code != std::errc::permission_denied && code != std::errc::operation_not_permitted) return "";
  return "give this user access to it (ls -ld '" + path1 + "' shows who may read it), or move it out of what gputrain reads";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace gputrain::core

#pragma once
// The shell's `ulimit` values: what explains a refusal the system gives no other reason for (too
// many open files, no more threads, a file or a mapping too large).

#include <sys/resource.h>

#include <cstdint>
#include <optional>

namespace gputrain::core {

/// The soft limit on `resource` (RLIMIT_NOFILE, RLIMIT_AS, ...) when one is set; nothing when it is
/// unlimited or cannot be read.
inline std::optional<std::uint64_t> soft_limit(decltype(RLIMIT_AS) resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace gputrain::core

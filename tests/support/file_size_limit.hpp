#pragma once
// The largest file this process may write (RLIMIT_FSIZE, the shell's `ulimit -f`), lowered for a
// test: a write past it fails with EFBIG, as a full disk fails with ENOSPC, on any machine and
// without root. SIGXFSZ, which would kill the process, is ignored meanwhile. Both are restored
// when the object goes.

#include <sys/resource.h>

#include <csignal>
#include <cstdint>

namespace gputrain::test_support {

class FileSizeLimit {
 public:
  FileSizeLimit() {
    ::getrlimit(RLIMIT_FSIZE, &original_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &original_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

  /// Files may grow to `bytes` and no further.
  void set(std::uint64_t bytes) {
    rlimit limit = original_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  /// Back to the limit the test started with.
  void lift() { ::setrlimit(RLIMIT_FSIZE, &original_); }

 private:
  rlimit original_{};
  void (*previous_handler_)(int) = SIG_DFL;
};

}  // namespace gputrain::test_support

#include "setup_progress.hpp"

#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/dist/rank_environment.hpp"

namespace gputrain::train {

SetupProgress::SetupProgress(std::ostream& out, bool speaks, std::chrono::milliseconds every) : out_(out), speaks_(speaks), every_(every) {}

void SetupProgress::operator()(const std::string& doing, std::uint64_t done, std::uint64_t total,
                               const std::function<std::string()>& amounts) {
  if (core::stop_requested())
    throw Error("interrupted while " + doing + " (" + amounts() + "), before any training step: nothing to resume",
                "run the same command again to start over", ExitCode::interrupted);
  if (!speaks_ || std::chrono::steady_clock::now() - last_ < every_) return;
  last_ = std::chrono::steady_clock::now();
  out_ << core::printable(doing) << ": " << (total ? 100 * done / total : 100) << " % (" << amounts() << ")\n" << std::flush;
}

bool SetupProgress::rank_zero() {
  try {
    const auto env = dist::read_rank_environment();
    return !env || env->rank == 0;
  } catch (const Error&) {  // bad launcher variables: the run's own set-up names them
    return true;
  }
}

}  // namespace gputrain::train

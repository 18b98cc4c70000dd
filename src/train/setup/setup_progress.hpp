#pragma once
// Long set-up work (a CSV's parse, a large synthetic set, the cache's fill) says how far it is
// every few seconds, and a stop signal ends it there: no step has run, so there is nothing to
// resume. Private to the train area.

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace gputrain::train {

class SetupProgress {
 public:
  /// Lines go to `out` at most every `every`. Every rank does the same set-up, so only rank 0
  /// (or a plain run) speaks; any rank stops on a stop request.
  explicit SetupProgress(std::ostream& out, bool speaks = rank_zero(), std::chrono::milliseconds every = std::chrono::seconds(5));

  /// `doing`: "reading data.csv"; `amounts`: how far, e.g. "408.38 MiB of 1.28 GiB", made only when
  /// said. Throws Error (exit 130, "interrupted while <doing> (<amounts>)") once a stop is requested.
  void operator()(const std::string& doing, std::uint64_t done, std::uint64_t total, const std::function<std::string()>& amounts);

  /// Whether this process is rank 0 of its run, or in no multi-process run.
  static bool rank_zero();

 private:
  std::ostream& out_;
  bool speaks_;
  std::chrono::milliseconds every_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace gputrain::train

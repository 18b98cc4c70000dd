#pragma once
// What a run file (training.log, metrics.jsonl, the TensorBoard events) does when the disk refuses
// its records: training goes on, since its checkpoints may still be written elsewhere, and the
// user is told once which steps' records are missing and what to fix, never left to find a file
// that silently stopped growing.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace gputrain::train {

class RefusedWrites {
 public:
  using Warn = std::function<void(const std::string&)>;
  /// `path`: the file, as the warnings name it; `warn` takes each warning line.
  RefusedWrites(std::string path, Warn warn);

  /// The outcome of writing the records of `step`: nullopt when they were written, else the errno.
  void record(std::optional<int> error, std::int64_t step);
  /// At the run's end: says so when the file is still refused (nothing otherwise).
  void finish();

 private:
  std::string missing_text() const;  // "3 records of steps 70-110 are missing"
  std::string path_;
  Warn warn_;
  std::optional<int> refusing_;  // the errno while the file is refused
  std::int64_t first_dropped_step_ = 0, last_dropped_step_ = 0;
  std::int64_t dropped_now_ = 0;  // since the last write that worked
};

}  // namespace gputrain::train

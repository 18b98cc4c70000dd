#pragma once
// A TensorBoard event file writer for scalars: the TFRecord framing and the few protobuf fields
// of Event/Summary that scalars need, so no TensorFlow or protobuf runtime is required.

#include <cstdint>
#include <optional>
#include <string>

#include "gputrain/core/record_file.hpp"

namespace gputrain::train {

class TensorBoardWriter {
 public:
  /// Creates `dir` and a new events.out.tfevents.<time>.<host> file in it.
  explicit TensorBoardWriter(const std::string& dir);
  /// Writes what was added since the last flush (a refusal is not reported: flush() first to know).
  ~TensorBoardWriter();
  /// Adds one scalar point; it reaches the file at the next flush().
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// Writes the points added since the last flush, all or none: nullopt when written, else the
  /// errno of the disk's refusal (the points are dropped, and the file stays readable).
  std::optional<int> flush();
  const std::string& path() const { return path_; }

 private:
  void add_record(const std::string& event);
  std::string path_;
  core::RecordFile file_;
  std::string pending_;  // whole TFRecords not yet written
};

}  // namespace gputrain::train

#pragma once
// A TensorBoard event file writer for scalars: the TFRecord framing and the few protobuf fields
// of Event/Summary that scalars need, so no TensorFlow or protobuf runtime is required.

#include <cstdint>
#include <fstream>
#include <string>

namespace gputrain::train {

class TensorBoardWriter {
 public:
  /// Creates `dir` and a new events.out.tfevents.<time>.<host> file in it.
  explicit TensorBoardWriter(const std::string& dir);
  /// Appends one scalar point.
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);
  std::string path_;
  std::ofstream file_;
};

}  // namespace gputrain::train

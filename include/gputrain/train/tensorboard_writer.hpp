#pragma once
// A TensorBoard event file writer for scalars, histograms, text and hyper-parameters: the TFRecord
// framing and the few protobuf fields of Event/Summary they need, so no TensorFlow or protobuf
// runtime is required.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gputrain/core/record_file.hpp"

namespace gputrain::train {

/// One histogram as TensorBoard's HistogramProto holds it: bucket i counts the values up to
/// bucket_limits[i] (from the one before, or from min).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limits, buckets;
};

/// A hyper-parameter's value, as the HParams dashboard compares them.
using HParamValue = std::variant<double, bool, std::string>;

class TensorBoardWriter {
 public:
  /// Creates `dir` and a new events.out.tfevents.<time>.<host>.gputrain<suffix> file in it (writers
  /// of one run in one folder differ by their suffix).
  explicit TensorBoardWriter(const std::string& dir, const std::string& suffix = "");
  /// Writes what was added since the last flush (a refusal is not reported: flush() first to know).
  ~TensorBoardWriter();
  /// Adds one scalar point; it reaches the file at the next flush().
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// Adds a histogram (the Histograms and Distributions tabs).
  void add_histogram(const std::string& tag, const Histogram& histogram, std::int64_t step);
  /// Adds text, rendered as Markdown (the Text tab).
  void add_text(const std::string& tag, const std::string& text, std::int64_t step);
  /// Adds the run's hyper-parameters (the HParams tab, which sets them beside the run's scalars).
  void add_hparams(const std::map<std::string, HParamValue>& hparams, double start_time_seconds);
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

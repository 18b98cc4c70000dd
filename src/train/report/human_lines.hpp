#pragma once
// The human-readable lines that training.log and the console's line mode share.

#include <string>
#include <vector>

#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

std::string header_line(const RunInfo& info);
/// A learning rate or a weight as the lines print it: 3 significant digits ("0.0302", "2e-07", "12.5").
std::string short_number(double value);
/// Per-feature figures as the notes print them: six significant digits (a price's 631400 and a
/// rate's 0.0123 both keep theirs), the first 8 values, then "... (N in all)".
std::string first_values(const std::vector<double>& values);
/// A class as the lines name it: 'cat' where the classes have names, else "class 3".
std::string class_label(std::int64_t id, const std::vector<std::string>& class_names);
std::string step_line(const StepMetrics& m, std::int64_t total_steps);
/// The progress bar for `columns` of terminal, within columns - 1 so that it never wraps:
/// "epoch 1/3 [####----] 120/500 loss 0.4231 1234 samples/s data 3% ETA 0:42", the bar narrowed
/// (down to 8) and then the figures dropped from the right (data, samples/s, loss) as it shrinks.
std::string bar_line(const StepMetrics& m, std::int64_t total_steps, std::int64_t epochs, int columns);
/// `show_balanced_accuracy`: RunInfo's, the val balanced accuracy after the val accuracy.
std::string epoch_line(const EpochMetrics& m, std::int64_t epochs, bool show_balanced_accuracy);
std::string oom_line(const memory::OomEvent& e);

/// Each class's recall and precision in `m`, named from `class_names` where there are names, after
/// `heading` ("val per class after epoch 3"): every class up to 8 classes ("'churn' 14 of 20 found
/// (recall 70.0 %), 14 of 31 predictions right (precision 45.2 %); ..."), else the 3 lowest recalls.
/// Classes without validation samples are left out; "" without per-class figures.
std::string class_report_line(const EpochMetrics& m, const std::vector<std::string>& class_names, const std::string& heading);

/// What to change when the device waited for data for a noticeable share of the run (the most
/// common reason a GPU trains slower than it could); "" when the stall is small or the run too
/// short to tell (under 20 steps). `cache` is where the data lived: vram, ram or none.
std::string data_stall_advice(double stall_percent, std::int64_t steps, const std::string& cache);

}  // namespace gputrain::train

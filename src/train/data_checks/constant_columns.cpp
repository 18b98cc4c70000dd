#include "constant_columns.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

#include "gputrain/core/units.hpp"
#include "leave_out_columns.hpp"

namespace gputrain::train {
namespace {

// Below this many samples a column may repeat one value by chance (a few rows of a small export).
constexpr std::int64_t kMinSamplesForConstants = 10;

// Columns named in the line; the count says the rest.
constexpr std::size_t kShown = 5;

std::string value_text(double value) {
  if (value == std::round(value) && std::fabs(value) < 1e15) return core::format_fixed(value, 0);
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// The columns of `values` ([N, columns]) whose every row holds the same value, with that value.
std::vector<std::pair<std::int64_t, double>> constant_columns(const at::Tensor& values) {
  const auto [min, max] = at::aminmax(values, 0);  // one pass over the training set
  const auto low = min.to(at::kDouble).contiguous(), high = max.to(at::kDouble).contiguous();
  std::vector<std::pair<std::int64_t, double>> found;
  for (std::int64_t i = 0; i < values.size(1); ++i)
    if (low.data_ptr<double>()[i] == high.data_ptr<double>()[i]) found.emplace_back(i, low.data_ptr<double>()[i]);
  return found;
}

std::string column_name(const std::vector<std::string>& names, std::int64_t i, const char* kind) {
  return i < static_cast<std::int64_t>(names.size()) ? "'" + names[static_cast<std::size_t>(i)] + "'"
                                                     : kind + std::string(" ") + std::to_string(i);
}

}  // namespace

std::vector<std::string> constant_column_notes(const Config& config, const data::Dataset& train, const std::vector<std::string>& names) {
  const auto whole = train.tensors();
  if (!whole || whole->size() < kMinSamplesForConstants || whole->inputs.dim() != 2 || !at::isFloatingType(whole->inputs.scalar_type()))
    return {};
  const std::string every = " in every one of the " + std::to_string(whole->size()) + " training samples";
  std::vector<std::string> lines;
  std::vector<std::pair<std::int64_t, double>> features;
  for (const auto& found : constant_columns(whole->inputs)) {
    const auto i = static_cast<std::size_t>(found.first);
    // A category's one-hot column ("city=Paris") all 0 only says the category is in validation alone.
    if (i >= names.size() || names[i].find('=') == std::string::npos) features.push_back(found);
  }
  if (!features.empty()) {
    std::vector<std::string> shown, left_out;
    for (const auto& [i, value] : features) {
      if (shown.size() < kShown) shown.push_back(column_name(names, i, "feature") + " is " + value_text(value));
      left_out.push_back(i < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(i)] : std::to_string(i));
    }
    const bool one = features.size() == 1;
    // Past a few, the list of every name would be the line: the setting is named without it.
    const std::string fix =
        features.size() > kShown ? "they may be left out with data.exclude" : leave_out_fix(config.data, names, left_out);
    lines.push_back(std::string(one ? "feature " : "features: ") + core::join(shown, ", ") +
                    (features.size() > kShown ? " (" + std::to_string(features.size()) + " in all)" : "") + every +
                    (one ? ", which tells the model nothing: " : "; they tell the model nothing: ") + fix);
  }
  const auto& targets = whole->targets;
  if (config.data.task == "regression" && targets.dim() == 2 && at::isFloatingType(targets.scalar_type())) {
    const auto& labels = config.data.labels;
    const bool named = labels.size() == static_cast<std::size_t>(targets.size(1));
    for (const auto& [i, value] : constant_columns(targets))
      lines.push_back("warning: the regression target " + column_name(named ? labels : std::vector<std::string>{}, i, "target") + " is " +
                      value_text(value) + every + ": the model can learn nothing but that number; check data.labels and the data's export");
  }
  return lines;
}

}  // namespace gputrain::train

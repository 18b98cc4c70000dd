#include "finite_data.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

// Where each sample holds NaN or inf, in its inputs or its float targets: [samples] of bool.
at::Tensor nonfinite_mask(const data::TensorDataset& set) {
  auto bad = at::zeros({set.size()}, at::TensorOptions().dtype(at::kBool).device(set.inputs.device()));
  for (const auto& t : {set.inputs, set.targets})
    if (t.defined() && at::isFloatingType(t.scalar_type())) bad |= at::isfinite(t).logical_not().reshape({set.size(), -1}).any(1);
  return bad;
}

// "x.npy" -> "x-complete.npy", beside it.
std::string complete_name(const std::string& path) {
  std::filesystem::path name(path);
  const auto extension = name.extension().string();
  return name.replace_extension().string() + "-complete" + extension;
}

// What the first bad sample holds: "nan in its inputs", "inf in its targets".
std::string what_it_holds(const data::TensorDataset& set, std::int64_t sample) {
  for (const auto& [t, part] : {std::pair{set.inputs, "inputs"}, std::pair{set.targets, "targets"}}) {
    if (!t.defined() || !at::isFloatingType(t.scalar_type())) continue;
    const auto values = t[sample].flatten();
    if (at::isnan(values).any().item<bool>()) return std::string("nan in its ") + part;
    if (at::isinf(values).any().item<bool>()) return std::string("inf in its ") + part;
  }
  return "";
}

}  // namespace

NonFiniteSamples find_nonfinite(const data::TensorDataset& set) {
  NonFiniteSamples found;
  found.samples = set.size();
  if (found.samples == 0) return found;
  // A NaN or inf anywhere makes the sum NaN or inf: one read of the data and no mask for the usual
  // clean set. A sum that overflows with finite values only sends the search to the mask below.
  const auto finite_sum = [](const at::Tensor& t) {
    return !t.defined() || !at::isFloatingType(t.scalar_type()) || std::isfinite(t.sum().item<double>());
  };
  if (finite_sum(set.inputs) && finite_sum(set.targets)) return found;
  const auto bad = nonfinite_mask(set);
  found.count = bad.sum().item<std::int64_t>();
  if (found.count > 0) found.first = bad.nonzero()[0][0].item<std::int64_t>();
  return found;
}

void refuse_nonfinite_samples(const Config& config, const data::Sources& sources) {
  for (const auto& [set, validation] : {std::pair{sources.train, false}, std::pair{sources.val, true}}) {
    const auto whole = set ? set->tensors() : std::nullopt;
    if (!whole) continue;
    const auto found = find_nonfinite(*whole);
    if (found.count == 0) continue;
    const auto& d = config.data;
    std::string fix = "fill them in or drop those samples (a missing value saved as NaN is the usual one); no setting trains on them";
    // Validation samples come from data.val_path, or are held out of data.path (data.val_fraction).
    const bool own_file = validation && !d.val_path.empty();
    const std::string features = own_file ? d.val_path : d.path;
    const std::string labels = own_file ? d.val_labels : d.labels.empty() ? "" : d.labels.front();
    if (d.source == "npy" && !features.empty() && !labels.empty())
      fix = "drop those samples from features and labels alike: python3 -c \"import numpy as np; x = np.load('" + features +
            "'); y = np.load('" + labels +
            "'); keep = np.isfinite(x.reshape(len(x), -1)).all(1) & np.isfinite(y.reshape(len(y), -1)).all(1); np.save('" +
            complete_name(features) + "', x[keep]); np.save('" + complete_name(labels) + "', y[keep])\", then use " +
            complete_name(features) + " and " + complete_name(labels) + "; or fill them in";
    throw UsageError(set->description() + " holds NaN or inf values in " + std::to_string(found.count) + " of its " +
                         core::counted(found.samples, "sample") + "; the first is " + set->origin(found.first) + " (" +
                         what_it_holds(*whole, found.first) + ")",
                     fix);
  }
}

}  // namespace gputrain::train

#include "class_id_labels.hpp"

#include <c10/util/StringUtil.h>

#include <cmath>

#include "gputrain/core/error.hpp"

namespace gputrain::data {
namespace {

// Rows of 0s with a single 1 each, as Keras' to_categorical and one-hot encoders write labels.
bool is_one_hot(const at::Tensor& labels) {
  if (labels.is_complex()) return false;
  const auto values = labels.to(at::kDouble);
  return at::logical_or(values == 0, values == 1).all().item<bool>() && at::equal(values.sum(1), at::ones({values.size(0)}, at::kDouble));
}

// Above this a float label is no class id (2^62: int64 holds it, and no output layer is so wide).
constexpr double kLargestClassId = 4611686018427387904.0;

// Float labels must be whole numbers an int64 holds: nan (pandas' missing value) and inf would
// convert to nonsense ids, and a fraction is a value to predict.
void check_float_class_ids(const at::Tensor& t, const std::string& what) {
  const auto first_where = [&](const at::Tensor& bad) { return at::nonzero(bad)[0][0].item<std::int64_t>(); };
  const auto label_text = [&](std::int64_t i) { return "label " + std::to_string(i) + " is " + c10::str(t[i].item<double>()); };
  const auto not_finite = at::isfinite(t).logical_not();
  if (not_finite.any().item<bool>()) {
    const auto first = first_where(not_finite);
    const bool missing = std::isnan(t[first].item<double>());
    const auto count = not_finite.sum().item<std::int64_t>();
    const std::string others =
        count == 1 ? ", the only one" : "; " + std::to_string(count) + " of the " + std::to_string(t.numel()) + " labels are nan or inf";
    throw UsageError(what + ": " + (missing ? "a label is missing" : "a label is infinite") + " (" + label_text(first) + others + ")",
                     "keep the samples that have a label: keep = numpy.isfinite(y); X, y = X[keep], y[keep]");
  }
  const auto fractional = t != t.floor();
  if (fractional.any().item<bool>())
    throw UsageError(what + ": classification labels are not whole numbers (" + label_text(first_where(fractional)) + ")",
                     "save class ids (0, 1, 2, ...), or set data.task: regression");
  const auto beyond = t.abs() > kLargestClassId;
  if (beyond.any().item<bool>())
    throw UsageError(what + ": a label is beyond any class id (" + label_text(first_where(beyond)) + ")",
                     "save class ids (0, 1, 2, ...), or set data.task: regression to predict the values");
}

}  // namespace

at::Tensor class_ids_from_labels(at::Tensor t, const std::string& what) {
  if (t.dim() == 2 && t.size(1) == 1) t = t.squeeze(1);
  if (t.dim() == 2 && t.size(0) > 0 && is_one_hot(t))
    throw UsageError(
        what + ": classification labels must be one class id per sample; they are one-hot rows of shape " + c10::str(t.sizes()),
        "save the class ids: y.argmax(1)");
  if (t.dim() != 1)
    throw UsageError(what + ": classification labels must be one class id per sample; they have shape " + c10::str(t.sizes()),
                     "save the labels as a 1-D integer array, or set data.task: regression");
  if (at::isFloatingType(t.scalar_type())) {
    check_float_class_ids(t, what);
  } else if (t.is_complex()) {  // bool labels are classes 0 and 1 (False, True), as a CSV's are
    throw UsageError(what + ": labels of dtype " + std::string(c10::toString(t.scalar_type())) + " are not class ids",
                     "save the labels as integers");
  }
  t = t.to(at::kLong);
  if (t.numel() > 0 && t.min().item<std::int64_t>() < 0) {
    const auto first = at::nonzero(t < 0)[0][0].item<std::int64_t>();
    throw UsageError(
        what + ": a class id is negative (label " + std::to_string(first) + " is " + std::to_string(t[first].item<std::int64_t>()) + ")",
        "class ids are 0, 1, 2, ...: shift the labels (y - y.min()), or set data.task: regression");
  }
  return t;
}

}  // namespace gputrain::data

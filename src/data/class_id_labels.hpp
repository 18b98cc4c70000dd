#pragma once
// Classification labels as the loss takes them: one int64 class id per sample. What other tools
// save instead (one-hot rows, a [N, 1] column, float ids, a missing label's nan) is taken when it
// means the same and refused, naming the first offending label and the line that converts it,
// when it does not.

#include <ATen/ATen.h>

#include <string>

namespace gputrain::data {

/// `labels` as int64 class ids, one per sample; throws UsageError (`what` names the files) for
/// one-hot rows, other shapes, labels that are missing (nan) or infinite, fractional, beyond any
/// class id, complex, or negative.
at::Tensor class_ids_from_labels(at::Tensor labels, const std::string& what);

}  // namespace gputrain::data

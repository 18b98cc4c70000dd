#pragma once
// train.class_weights made into the per-class weights the training loss multiplies each sample's
// loss by, and the line that tells the run's log what they are. Private to the train area:
// open_data (run_setup.cpp) calls these once the labels have given the classes.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// float32 [classes] on the CPU, or an undefined tensor when `setting` is none.
/// - balanced: samples / (classes present * the class's count) over `train`'s labels, so that a
///   training sample weighs 1 on average and the loss keeps its scale (scikit-learn's rule, which
///   counts every class as present); a class without training samples gets 1, which no sample uses.
/// - a list: taken as given, once its length is checked against `classes`.
/// Throws UsageError when the list's length differs from `classes`, when every training sample's
/// class weighs 0, or when `train` knows its labels only by reading every sample (balanced).
at::Tensor resolve_class_weights(const ClassWeights& setting, const data::Dataset& train, std::int64_t classes);

/// For the run's log: "class weights (train.class_weights: balanced): 'died' 0.81, 'survived' 1.31"
/// (each class up to 8 classes, else the lightest and the heaviest), then, when best.pt is kept by
/// val_loss in a run with validation data (`validated`), that they weigh the training loss only and
/// the metric that matches them. "" for none.
std::string class_weights_note(const at::Tensor& weights, const ClassWeights& setting, const std::vector<std::string>& class_names,
                               const std::string& best_metric, bool validated);

}  // namespace gputrain::train

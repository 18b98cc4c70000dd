#include "class_weights.hpp"

#include <ATen/ATen.h>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "train/report/human_lines.hpp"

namespace gputrain::train {
namespace {

// Up to this many classes the note lists every weight; beyond, the lightest and the heaviest.
constexpr std::int64_t kListedClasses = 8;

}  // namespace

at::Tensor resolve_class_weights(const ClassWeights& setting, const data::Dataset& train, std::int64_t classes) {
  if (!setting.any()) return {};
  const auto ids = train.class_ids();
  if (setting.balanced && !ids)
    throw UsageError("train.class_weights: balanced counts the training labels, but " + train.description() +
                         " knows a label only by reading its sample",
                     "give one weight per class instead, e.g. train.class_weights: [1, 4.5]");
  at::Tensor weights;
  if (setting.balanced) {
    const auto counts = at::bincount(*ids, {}, classes).to(at::kDouble);
    const auto present = counts.gt(0);
    const double classes_present = static_cast<double>(present.sum().item<std::int64_t>());
    const double samples = static_cast<double>(ids->numel());
    weights = at::where(present, samples / (classes_present * counts), at::ones_like(counts)).to(at::kFloat);
  } else {
    if (static_cast<std::int64_t>(setting.given.size()) != classes)
      throw UsageError("train.class_weights lists " + std::to_string(setting.given.size()) + " weights but the labels of " +
                           train.description() + " give " + std::to_string(classes) + " classes",
                       "give one weight per class (class 0 first), or train.class_weights: balanced to weigh them by their counts");
    weights = at::tensor(setting.given, at::kDouble).to(at::kFloat);
  }
  if (ids && ids->numel() > 0 && weights.index_select(0, *ids).sum().item<double>() == 0)
    throw UsageError("train.class_weights give every training sample's class the weight 0: nothing would train",
                     "give the classes in the training labels a weight above 0");
  return weights;
}

std::string class_weights_note(const at::Tensor& weights, const ClassWeights& setting, const std::vector<std::string>& class_names,
                               const std::string& best_metric, bool validated) {
  if (!weights.defined()) return "";
  const auto values = weights.to(at::kDouble).contiguous();
  const auto* w = values.data_ptr<double>();
  const std::int64_t classes = values.numel();
  std::string line = std::string("class weights (train.class_weights: ") +
                     (setting.balanced ? "balanced, from the training labels' counts" : "as given") + "): ";
  if (classes <= kListedClasses) {
    std::vector<std::string> each;
    for (std::int64_t c = 0; c < classes; ++c) each.push_back(class_label(c, class_names) + " " + short_number(w[c]));
    line += core::join(each);
  } else {
    const auto lightest = values.argmin().item<std::int64_t>(), heaviest = values.argmax().item<std::int64_t>();
    line += "from " + short_number(w[lightest]) + " (" + class_label(lightest, class_names) + ") to " + short_number(w[heaviest]) + " (" +
            class_label(heaviest, class_names) + ") over " + std::to_string(classes) + " classes";
  }
  // best.pt kept by the plain val loss would prefer the unweighted model the weights move away from.
  if (validated && best_metric == "val_loss")
    line +=
        "; they weigh the training loss only: val loss is the plain cross-entropy, and checkpoint.best_metric: "
        "val_balanced_accuracy keeps best.pt by what the weights aim at";
  return line;
}

}  // namespace gputrain::train

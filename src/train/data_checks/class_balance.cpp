#include "class_balance.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/printable.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {

// Above this many classes, ids that leave most of 0..max unused are taken for values to predict.
constexpr std::int64_t kSparseClassesFrom = 1000;

void refuse_sparse_class_ids(const data::Sources& sources) {
  const auto classes = sources.classes;
  const auto ids = sources.train->class_ids();
  if (classes <= kSparseClassesFrom || !sources.class_names.empty() || !ids) return;
  const auto& labels = *ids;
  const auto distinct = std::get<0>(at::_unique(labels, /*sorted=*/false)).numel();
  if (2 * distinct >= classes) return;
  throw UsageError("the labels of " + sources.train->description() + " look like values to predict, not class ids: " +
                       std::to_string(distinct) + " different values from " + std::to_string(labels.min().item<std::int64_t>()) + " to " +
                       std::to_string(classes - 1) + " among " + std::to_string(labels.numel()) + " samples, which as class ids make " +
                       std::to_string(classes) + " classes (an output of " + std::to_string(classes) + " units, most never a label)",
                   "set data.task: regression to predict them; if they are class ids, set data.classes: " + std::to_string(classes) +
                       " to train with that many classes anyway");
}

void refuse_single_class(const data::Sources& sources, const data::SourceSpec& spec) {
  const auto ids = sources.train->class_ids();
  if (!ids || ids->numel() == 0) return;
  const auto first = (*ids)[0].item<std::int64_t>();
  if (!at::equal(*ids, at::full_like(*ids, first))) return;
  const std::string name = first < static_cast<std::int64_t>(sources.class_names.size())
                               ? "class " + std::to_string(first) + " (" + core::quoted(sources.class_names[first]) + ")"
                               : "class " + std::to_string(first);
  std::string what = "the training labels are all " + name +
                     ": a classifier learns nothing from one class (it would always answer it); data: " + sources.train->description();
  // A small file's rare classes can all land in the hold-out: the file is fine, the split is not.
  const auto val_ids = sources.val && spec.val_fraction > 0 && spec.val_path.empty() ? sources.val->class_ids() : std::nullopt;
  if (val_ids && (*val_ids != first).any().item<bool>()) {
    throw UsageError(what + "; holding out data.val_fraction " + c10::str(spec.val_fraction) + " took every sample of the other classes",
                     "hold out fewer samples (a smaller data.val_fraction) or add samples of the rarer classes");
  }
  throw UsageError(what, spec.source == "image_folder"
                             ? "give each class a sub-folder of its own images in " + spec.path + "; a folder's name is its class"
                             : "check that data.labels names the label column; to predict a number instead, set data.task: regression");
}

void refuse_identifier_labels(const data::Sources& sources, const data::SourceSpec& spec) {
  const auto ids = sources.train->class_ids();
  if (!ids || ids->numel() <= kSparseClassesFrom) return;
  const auto counts = at::bincount(*ids);
  const auto present = (counts > 0).sum().item<std::int64_t>(), once = (counts == 1).sum().item<std::int64_t>();
  if (present <= kSparseClassesFrom || once * 100 < present * 99) return;
  throw UsageError("the labels of " + sources.train->description() + " name samples, not classes: " + std::to_string(present) +
                       " classes among " + std::to_string(ids->numel()) + " training samples, " + std::to_string(once) +
                       " of them on one sample only; a classifier learns no class from one sample, and its output layer would have " +
                       std::to_string(present) + " units",
                   spec.source == "image_folder"
                       ? "put each class's images in one sub-folder of " + spec.path + " (a folder's name is its class)"
                       : "check that data.labels names the column to predict, not an id or a name per row; to predict a number, set "
                         "data.task: regression");
}

namespace {

// The first five of `ids` (a 1-D tensor of class ids), each with its name where there is one,
// then how many more: "2 ('c'), 3 ('d') and 4 more".
std::string listed_ids(const at::Tensor& ids, const std::vector<std::string>& class_names) {
  constexpr std::int64_t kNamed = 5;
  std::vector<std::string> named;
  for (std::int64_t i = 0; i < std::min(ids.numel(), kNamed); ++i) {
    const auto id = ids[i].item<std::int64_t>();
    named.push_back(std::to_string(id) +
                    (id < static_cast<std::int64_t>(class_names.size()) ? " (" + core::quoted(class_names[id]) + ")" : ""));
  }
  std::string list = core::join(named);
  if (ids.numel() > kNamed) list += " and " + std::to_string(ids.numel() - kNamed) + " more";  // ids may be many: not all named
  return list;
}

}  // namespace

std::string unseen_classes_note(const data::Sources& sources, std::int64_t classes) {
  const auto train_ids = sources.train->class_ids();
  const auto val_ids = sources.val ? sources.val->class_ids() : std::nullopt;
  if (classes < 2 || !train_ids || !val_ids || val_ids->numel() == 0 || train_ids->numel() == 0) return "";
  // Counted over the labels' span, not data.classes' (a mistyped 1000000000 is 8 GB of counts).
  const auto span = std::max(train_ids->max().item<std::int64_t>(), val_ids->max().item<std::int64_t>()) + 1;
  const auto trained = at::bincount(*train_ids, {}, span) > 0;
  const auto val_counts = at::bincount(*val_ids, {}, span);
  const auto unseen = at::nonzero((val_counts > 0).logical_and(trained.logical_not())).flatten();
  if (unseen.numel() == 0) return "";
  const auto samples = val_counts.index_select(0, unseen).sum().item<std::int64_t>();
  const std::string list = listed_ids(unseen, sources.class_names);
  return "note: the validation labels hold " + std::string(unseen.numel() == 1 ? "class " : "classes ") + list +
         ", which no training label has (" + core::counted(samples, "validation sample") + " of " + std::to_string(val_ids->numel()) +
         "): the model cannot learn to answer " + (unseen.numel() == 1 ? "it" : "them") + ", so " +
         (samples == 1 ? "that sample counts" : "those samples count") + " as errors";
}

std::string empty_class_ids_note(const data::Sources& sources) {
  if (!sources.class_names.empty()) return "";  // names are numbered 0, 1, 2, ... as they come
  const auto train_ids = sources.train->class_ids();
  if (!train_ids || train_ids->numel() == 0) return "";
  auto val_ids = sources.val ? sources.val->class_ids() : std::nullopt;
  if (val_ids && val_ids->numel() == 0) val_ids.reset();
  const auto span = std::max(train_ids->max().item<std::int64_t>(), val_ids ? val_ids->max().item<std::int64_t>() : 0) + 1;
  auto counts = at::bincount(*train_ids, {}, span);
  if (val_ids) counts += at::bincount(*val_ids, {}, span);
  const auto empty = at::nonzero(counts == 0).flatten();
  if (empty.numel() == 0) return "";
  const auto classes = std::to_string(span), used = std::to_string(span - empty.numel());
  if (empty.numel() == 1 && empty[0].item<std::int64_t>() == 0)
    return "note: no label is class 0: the labels run from 1 to " + std::to_string(span - 1) +
           ", as R, MATLAB and many datasets number classes, so the model gets " + classes + " outputs for " + used +
           " classes, one of which no sample trains; to number them from 0, save the labels minus 1 (y - 1)";
  const std::string list = listed_ids(empty, sources.class_names);
  return "note: " + std::string(empty.numel() == 1 ? "class " + list + " has" : "classes " + list + " have") +
         " no sample among the labels, which run from 0 to " + std::to_string(span - 1) + ": the model gets " + classes + " outputs for " +
         used + " classes, " + (empty.numel() == 1 ? "one" : std::to_string(empty.numel())) +
         " of which no sample trains; labels that are codes rather than class ids become ids 0, 1, 2, ... with "
         "numpy.unique(y, return_inverse=True)";
}

// How far above an even split the most common class must be before it is worth a line: a
// 60/40 binary split is ordinary, 95/5 changes what an accuracy means.
constexpr double kUnbalancedFactor = 1.5;

std::string class_balance_note(const data::Sources& sources, std::int64_t classes, bool weighted) {
  const bool on_val = sources.val != nullptr;
  const auto& set = on_val ? sources.val : sources.train;
  const auto ids = set ? set->class_ids() : std::nullopt;
  if (classes < 2 || !ids || ids->numel() == 0) return "";
  const auto samples = ids->numel();
  const auto counts = at::bincount(*ids);  // up to the largest label: the classes past it have none
  const auto most = counts.argmax().item<std::int64_t>();
  const auto count = counts[most].item<std::int64_t>();
  const double share = static_cast<double>(count) / static_cast<double>(samples);
  if (share < kUnbalancedFactor / static_cast<double>(classes)) return "";
  const std::string name = most < static_cast<std::int64_t>(sources.class_names.size())
                               ? core::quoted(sources.class_names[most]) + " (class " + std::to_string(most) + ")"
                               : "class " + std::to_string(most);
  return "classes are unbalanced: the most common, " + name + ", is " + core::format_fixed(100 * share, 1) + " % of the " +
         (on_val ? "validation" : "training") + " samples (" + std::to_string(count) + " of " + std::to_string(samples) + "), the " +
         (on_val ? "val accuracy of always answering it; the balanced accuracy (each class's accuracy, averaged) shows what the rarer "
                   "classes get"
                 // Without validation data there is no balanced accuracy to point at: say how to get one.
                 : "accuracy of always answering it; hold some out (data.val_fraction: 0.2) to see the balanced accuracy (each class's "
                   "accuracy, averaged), what the rarer classes get") +
         (weighted ? "" : ", and train.class_weights: balanced weighs them up in the training loss");
}

std::string look_alike_classes_note(const std::vector<std::string>& class_names) {
  std::map<std::string, std::vector<std::string>> by_key;  // lower case, spaces collapsed
  for (const auto& name : class_names) {
    std::string key;  // the words, one space apart
    for (const char c : name)
      if (!std::isspace(static_cast<unsigned char>(c)))
        key += c;
      else if (!key.empty() && key.back() != ' ')
        key += ' ';
    if (!key.empty() && key.back() == ' ') key.pop_back();
    by_key[core::lower(key)].push_back(name);
  }
  std::vector<std::string> groups;
  for (const auto& [key, names] : by_key) {
    if (names.size() < 2) continue;
    std::vector<std::string> shown;
    for (const auto& name : names) shown.push_back(core::quoted(name));  // a stray tab shows as \t
    groups.push_back(core::join(shown, " and "));
  }
  if (groups.empty()) return "";
  const bool one = groups.size() == 1;
  return "class names " + core::join(groups, "; ") + (one ? " differ" : " each differ") +
         " only in letter case or spacing, and train as classes of their own: if they are one class, write them alike in the labels";
}

}  // namespace gputrain::train

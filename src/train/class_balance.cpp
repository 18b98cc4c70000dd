#include "class_balance.hpp"

#include <ATen/ATen.h>

#include "gputrain/core/units.hpp"

namespace gputrain::train {

// How far above an even split the most common class must be before it is worth a line: a
// 60/40 binary split is ordinary, 95/5 changes what an accuracy means.
constexpr double kUnbalancedFactor = 1.5;

std::string class_balance_note(const data::Sources& sources, std::int64_t classes) {
  const bool on_val = sources.val != nullptr;
  const auto& set = on_val ? sources.val : sources.train;
  const auto whole = set ? set->tensors() : std::nullopt;
  if (classes < 2 || !whole || whole->size() == 0 || whole->targets.scalar_type() != at::kLong) return "";
  const auto counts = at::bincount(whole->targets.flatten(), {}, classes);
  const auto most = counts.argmax().item<std::int64_t>();
  const auto count = counts[most].item<std::int64_t>();
  const double share = static_cast<double>(count) / static_cast<double>(whole->size());
  if (share < kUnbalancedFactor / static_cast<double>(classes)) return "";
  const std::string name = most < static_cast<std::int64_t>(sources.class_names.size()) ? "'" + sources.class_names[most] + "' (class " +
                                                                                               std::to_string(most) + ")"
                                                                                         : "class " + std::to_string(most);
  return "classes are unbalanced: the most common, " + name + ", is " + core::format_fixed(100 * share, 1) + " % of the " +
         (on_val ? "validation" : "training") + " samples (" + std::to_string(count) + " of " + std::to_string(whole->size()) +
         "), the " + (on_val ? "val " : "") + "accuracy of always answering it";
}

}  // namespace gputrain::train

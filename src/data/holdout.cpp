#include "gputrain/data/holdout.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "subset.hpp"

namespace gputrain::data {
namespace {

// `held` samples of `order` (a random permutation) such that each class keeps its share in both
// parts, as scikit-learn's stratified split does: class c gets round(held x n_c / total) of them
// (largest remainders, so they add up to `held`), but never its last sample, which training needs
// to learn the class. What that leaves short (classes of one sample: labels that are ids) comes
// from the classes with samples to spare, then from any, in the permutation's order; so labels
// unique to each sample give the plain random split.
at::Tensor stratified_pick(const at::Tensor& order, const at::Tensor& ids, std::int64_t held) {
  const std::int64_t total = order.numel();
  const auto counts_tensor = at::bincount(ids.to(at::kLong));
  std::vector<std::int64_t> counts(counts_tensor.data_ptr<std::int64_t>(), counts_tensor.data_ptr<std::int64_t>() + counts_tensor.numel());
  const auto classes = counts.size();
  std::vector<std::int64_t> quota(classes);
  std::vector<std::pair<double, std::size_t>> remainders;  // (remainder, class), largest first
  std::int64_t given = 0;
  for (std::size_t c = 0; c < classes; ++c) {
    const double exact = static_cast<double>(held) * static_cast<double>(counts[c]) / static_cast<double>(total);
    quota[c] = static_cast<std::int64_t>(std::floor(exact));
    given += quota[c];
    remainders.push_back({exact - static_cast<double>(quota[c]), c});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < held && k < remainders.size(); ++k, ++given) ++quota[remainders[k].second];
  for (std::size_t c = 0; c < classes; ++c) quota[c] = std::min(quota[c], std::max<std::int64_t>(counts[c] - 1, 0));

  const auto order_c = order.contiguous();
  const auto ids_c = ids.to(at::kLong).contiguous();
  const std::int64_t* index = order_c.data_ptr<std::int64_t>();
  const std::int64_t* class_of = ids_c.data_ptr<std::int64_t>();
  std::vector<std::int64_t> taken(classes, 0), picked;
  std::vector<bool> chosen(static_cast<std::size_t>(total), false);
  const auto pass = [&](const auto& may_take) {
    for (std::int64_t k = 0; k < total && static_cast<std::int64_t>(picked.size()) < held; ++k) {
      const auto i = index[k];
      const auto c = static_cast<std::size_t>(class_of[i]);
      if (chosen[static_cast<std::size_t>(i)] || !may_take(c)) continue;
      chosen[static_cast<std::size_t>(i)] = true;
      ++taken[c];
      picked.push_back(i);
    }
  };
  pass([&](std::size_t c) { return taken[c] < quota[c]; });
  pass([&](std::size_t c) { return taken[c] < counts[c] - 1; });
  pass([](std::size_t) { return true; });
  return at::tensor(picked, at::kLong);
}

}  // namespace

HeldOut hold_out(const std::shared_ptr<const Dataset>& set, double fraction, std::uint64_t seed) {
  const std::int64_t total = set->size();
  const auto held = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(total)));
  if (held < 1 || held >= total)
    throw UsageError("data.val_fraction " + c10::str(fraction) + " of " + core::counted(total, "sample") + " leaves " +
                         (held < 1 ? "no validation sample" : "no training sample"),
                     held < 1 ? "raise data.val_fraction, or set it to 0 to train without validation" : "lower data.val_fraction");
  // A generator of its own, seeded apart from the epoch orders' (EpochSampler), so that the split
  // does not move when the training order does.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto order = at::randperm(total, gen, at::kLong);
  const auto ids = set->class_ids();
  const auto val = ids ? stratified_pick(order, *ids, held) : order.slice(0, 0, held);
  at::Tensor in_val = at::zeros({total}, at::kBool);
  in_val.index_fill_(0, val, true);
  const auto val_indices = at::nonzero(in_val).flatten();
  const auto train_indices = at::nonzero(in_val.logical_not()).flatten();
  return {subset(set, train_indices, set->description() + ": " + std::to_string(total - held) + " for training"),
          subset(set, val_indices, std::to_string(held) + " held out for validation (data.val_fraction " + c10::str(fraction) + ")")};
}

}  // namespace gputrain::data

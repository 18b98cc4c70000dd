#include "gputrain/data/holdout.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "gputrain/core/error.hpp"

namespace gputrain::data {
namespace {

// Some samples of another dataset, read through it; an array set's samples are also gathered once
// into arrays of their own, so the cache and the probes see an in-memory set as before.
class Subset final : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, at::Tensor indices, std::string description)
      : base_(std::move(base)), indices_(std::move(indices)), description_(std::move(description)) {
    if (auto whole = base_->tensors()) selected_ = TensorDataset{whole->inputs.index_select(0, indices_), whole->targets.index_select(0, indices_)};
  }
  std::int64_t size() const override { return indices_.size(0); }
  const SampleLayout& layout() const override { return base_->layout(); }
  void read(std::int64_t index, void* input, void* target) const override { base_->read(base_index(index), input, target); }
  std::string origin(std::int64_t index) const override { return base_->origin(base_index(index)); }
  std::optional<TensorDataset> tensors() const override { return selected_; }
  std::string description() const override { return description_; }

 private:
  std::int64_t base_index(std::int64_t index) const { return indices_.data_ptr<std::int64_t>()[index]; }

  std::shared_ptr<const Dataset> base_;
  at::Tensor indices_;
  std::optional<TensorDataset> selected_;
  std::string description_;
};

}  // namespace

HeldOut hold_out(std::shared_ptr<const Dataset> set, double fraction, std::uint64_t seed) {
  const std::int64_t total = set->size();
  const auto held = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(total)));
  if (held < 1 || held >= total)
    throw UsageError("data.val_fraction " + c10::str(fraction) + " of " + std::to_string(total) + " samples leaves " +
                         (held < 1 ? "no validation sample" : "no training sample"),
                     held < 1 ? "raise data.val_fraction, or set it to 0 to train without validation"
                              : "lower data.val_fraction");
  // A generator of its own, seeded apart from the epoch orders' (EpochSampler), so that the split
  // does not move when the training order does.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto order = at::randperm(total, gen, at::kLong);
  const auto val_indices = std::get<0>(order.slice(0, 0, held).sort());
  const auto train_indices = std::get<0>(order.slice(0, held).sort());
  return {std::make_shared<Subset>(set, train_indices, set->description() + ": " + std::to_string(total - held) + " for training"),
          std::make_shared<Subset>(set, val_indices, std::to_string(held) + " held out for validation (data.val_fraction " + c10::str(fraction) + ")")};
}

}  // namespace gputrain::data

#include "subset.hpp"

namespace gputrain::data {
namespace {

class Subset final : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, at::Tensor indices, std::string description)
      : base_(std::move(base)), indices_(std::move(indices)), description_(std::move(description)) {
    if (auto whole = base_->tensors()) {
      selected_ = make_array_dataset({whole->inputs.index_select(0, indices_), whole->targets.index_select(0, indices_)}, description_, "");
      base_ = without_samples(base_);  // the copy above is all this subset reads
    }
  }
  std::int64_t size() const override { return indices_.size(0); }
  const SampleLayout& layout() const override { return base_->layout(); }
  void read(std::int64_t index, void* input, void* target) const override {
    if (selected_) return selected_->read(index, input, target);
    base_->read(base_index(index), input, target);
  }
  std::string origin(std::int64_t index) const override { return base_->origin(base_index(index)); }
  std::optional<TensorDataset> tensors() const override { return selected_ ? selected_->tensors() : std::nullopt; }
  std::optional<at::Tensor> class_ids() const override {
    if (selected_) return selected_->class_ids();
    auto all = base_->class_ids();
    if (!all) return std::nullopt;
    return all->index_select(0, indices_);
  }
  std::string description() const override { return description_; }

 private:
  std::int64_t base_index(std::int64_t index) const { return indices_.data_ptr<std::int64_t>()[index]; }

  std::shared_ptr<const Dataset> base_;
  at::Tensor indices_;
  std::shared_ptr<const Dataset> selected_;  // an array set's samples, copied out of it
  std::string description_;
};

}  // namespace

std::shared_ptr<const Dataset> subset(std::shared_ptr<const Dataset> base, const at::Tensor& indices, std::string description) {
  return std::make_shared<Subset>(std::move(base), indices.contiguous(), std::move(description));
}

}  // namespace gputrain::data

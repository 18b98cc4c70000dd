#include "gputrain/data/dataset.hpp"

#include <ATen/ATen.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gputrain/core/error.hpp"
#include "subset.hpp"

namespace gputrain::data {
namespace {

std::int64_t bytes_of(const std::vector<std::int64_t>& shape, at::ScalarType dtype) {
  std::int64_t n = static_cast<std::int64_t>(c10::elementSize(dtype));
  for (const auto d : shape) n *= d;
  return n;
}

class ArrayDataset final : public Dataset {
 public:
  ArrayDataset(const TensorDataset& set, std::string description, std::string origin_name)
      : set_{set.inputs.contiguous(), set.targets.contiguous()}, description_(std::move(description)), origin_(std::move(origin_name)) {
    if (set_.inputs.size(0) != set_.targets.size(0))
      throw UsageError(
          description_ + ": " + std::to_string(set_.inputs.size(0)) + " inputs but " + std::to_string(set_.targets.size(0)) + " labels",
          "give as many labels as samples (the first dimension of both arrays)");
    layout_.input_shape = set_.inputs.sizes().slice(1).vec();
    layout_.target_shape = set_.targets.sizes().slice(1).vec();
    layout_.input_dtype = set_.inputs.scalar_type();
    layout_.target_dtype = set_.targets.scalar_type();
    input_bytes_ = layout_.input_bytes();
    target_bytes_ = layout_.target_bytes();
  }
  std::int64_t size() const override { return set_.inputs.size(0); }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t index, void* input, void* target) const override {
    std::memcpy(input, static_cast<const char*>(set_.inputs.const_data_ptr()) + index * input_bytes_,
                static_cast<std::size_t>(input_bytes_));
    std::memcpy(target, static_cast<const char*>(set_.targets.const_data_ptr()) + index * target_bytes_,
                static_cast<std::size_t>(target_bytes_));
  }
  std::string origin(std::int64_t index) const override { return origin_ + " sample " + std::to_string(index); }
  std::optional<TensorDataset> tensors() const override { return set_; }
  std::string description() const override { return description_; }
  std::shared_ptr<const Dataset> described_only() const;

 private:
  TensorDataset set_;
  SampleLayout layout_;
  std::int64_t input_bytes_ = 0, target_bytes_ = 0;
  std::string description_, origin_;
};

// A set without its samples: its size, layout, description, and its samples' names.
class Description final : public Dataset {
 public:
  Description(std::int64_t size, SampleLayout layout, std::string description, std::string origin_name)
      : size_(size), layout_(std::move(layout)), description_(std::move(description)), origin_(std::move(origin_name)) {}
  std::int64_t size() const override { return size_; }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t, void*, void*) const override { throw std::logic_error(description_ + ": its samples were let go"); }
  std::string origin(std::int64_t index) const override { return origin_ + " sample " + std::to_string(index); }
  std::string description() const override { return description_; }

 private:
  std::int64_t size_;
  SampleLayout layout_;
  std::string description_, origin_;
};

std::shared_ptr<const Dataset> ArrayDataset::described_only() const {
  return std::make_shared<Description>(size(), layout_, description_, origin_);
}

}  // namespace

std::shared_ptr<const Dataset> without_samples(const std::shared_ptr<const Dataset>& set) {
  if (const auto* array = dynamic_cast<const ArrayDataset*>(set.get())) return array->described_only();
  return set;
}

std::shared_ptr<const Dataset> described_only(const std::shared_ptr<const Dataset>& set) {
  if (!set || dynamic_cast<const Description*>(set.get())) return set;
  if (auto array = without_samples(set); array != set) return array;
  return std::make_shared<Description>(set->size(), set->layout(), set->description(), set->description());
}

std::optional<at::Tensor> Dataset::class_ids() const {
  const auto whole = tensors();
  if (!whole || whole->targets.scalar_type() != at::kLong || whole->targets.dim() != 1) return std::nullopt;
  return whole->targets;
}

std::int64_t SampleLayout::input_bytes() const { return bytes_of(input_shape, input_dtype); }
std::int64_t SampleLayout::target_bytes() const { return bytes_of(target_shape, target_dtype); }

std::shared_ptr<Dataset> make_array_dataset(TensorDataset set, std::string description, std::string origin_name) {
  return std::make_shared<ArrayDataset>(std::move(set), std::move(description), std::move(origin_name));
}

Materialized materialize(const Dataset& dataset, int threads, const std::function<void(std::int64_t, std::int64_t)>& progress) {
  if (auto whole = dataset.tensors()) return {*whole, {}};
  const auto& layout = dataset.layout();
  const std::int64_t n = dataset.size();
  std::vector<std::int64_t> input_shape{n}, target_shape{n};
  input_shape.insert(input_shape.end(), layout.input_shape.begin(), layout.input_shape.end());
  target_shape.insert(target_shape.end(), layout.target_shape.begin(), layout.target_shape.end());
  auto inputs = at::empty(input_shape, at::TensorOptions().dtype(layout.input_dtype));
  auto targets = at::empty(target_shape, at::TensorOptions().dtype(layout.target_dtype));
  std::vector<char> ok(static_cast<std::size_t>(n), 1);
  std::vector<std::string> skipped;
  std::mutex skipped_mutex;
  std::atomic<std::int64_t> next{0};
  const auto in_bytes = layout.input_bytes(), tgt_bytes = layout.target_bytes();
  auto* in_base = static_cast<char*>(inputs.data_ptr());
  auto* tgt_base = static_cast<char*>(targets.data_ptr());
  std::exception_ptr failure;
  const std::int64_t report_every = std::max<std::int64_t>(1, n / 100);
  std::int64_t reported = 0;  // touched by the reporting thread only
  const auto work = [&](bool reports) {
    try {
      for (std::int64_t i = next++; i < n; i = next++) {
        if (reports && progress && i - reported >= report_every) progress(reported = i, n);
        try {
          dataset.read(i, in_base + i * in_bytes, tgt_base + i * tgt_bytes);
        } catch (const SkippedSample& e) {
          ok[static_cast<std::size_t>(i)] = 0;
          std::lock_guard<std::mutex> lock(skipped_mutex);
          skipped.push_back(dataset.origin(i) + ": " + e.what());
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(skipped_mutex);
      if (!failure) failure = std::current_exception();
      next = n;  // the others stop too
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work, false);
  work(true);
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  if (progress) progress(n, n);
  if (!skipped.empty()) {
    std::sort(skipped.begin(), skipped.end());
    const auto keep = at::from_blob(ok.data(), {n}, at::kChar).to(at::kBool);
    inputs = inputs.index({keep});
    targets = targets.index({keep});
  }
  return {{inputs, targets}, skipped};
}

}  // namespace gputrain::data

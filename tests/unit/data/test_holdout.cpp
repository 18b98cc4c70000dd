// data.val_fraction: a validation set held out of the training set.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "gputrain/core/error.hpp"
#include "gputrain/data/holdout.hpp"
#include "gputrain/data/sources.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

// Samples 0..n-1 whose input and label are their own index, as arrays.
std::shared_ptr<Dataset> numbered(std::int64_t n) {
  return make_array_dataset({at::arange(n, at::kFloat).unsqueeze(1), at::arange(n, at::kLong)}, "numbered", "numbered.npy");
}

// The same samples, read one at a time as an image folder is: no arrays in memory. With
// `labels_known`, their class ids are known without reading them, as an image folder's are.
class NumberedFiles final : public Dataset {
 public:
  explicit NumberedFiles(std::int64_t n, bool labels_known = false) : n_(n), labels_known_(labels_known) { layout_.input_shape = {1}; }
  std::optional<at::Tensor> class_ids() const override {
    if (!labels_known_) return std::nullopt;
    return at::arange(n_, at::kLong);
  }
  std::int64_t size() const override { return n_; }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t index, void* input, void* target) const override {
    const float value = static_cast<float>(index);
    std::memcpy(input, &value, sizeof value);
    std::memcpy(target, &index, sizeof index);
  }
  std::string origin(std::int64_t index) const override { return "file-" + std::to_string(index) + ".png"; }
  std::string description() const override { return "numbered files"; }

 private:
  std::int64_t n_;
  bool labels_known_;
  SampleLayout layout_;
};

std::vector<std::int64_t> labels_of(const Dataset& set) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < set.size(); ++i) {
    float input = 0;
    std::int64_t label = -1;
    set.read(i, &input, &label);
    EXPECT_EQ(input, static_cast<float>(label));
    out.push_back(label);
  }
  return out;
}

std::vector<std::int64_t> values_of(const std::optional<at::Tensor>& ids) {
  if (!ids) return {};
  const auto contiguous = ids->contiguous();
  return {contiguous.data_ptr<std::int64_t>(), contiguous.data_ptr<std::int64_t>() + contiguous.numel()};
}

}  // namespace

TEST(HoldOut, PartsAreDisjointCoverEverySampleAndKeepFileOrder) {
  const auto parts = hold_out(numbered(100), 0.2, 7);
  ASSERT_EQ(parts.val->size(), 20);
  ASSERT_EQ(parts.train->size(), 80);
  const auto train = labels_of(*parts.train), val = labels_of(*parts.val);
  std::set<std::int64_t> all(train.begin(), train.end());
  all.insert(val.begin(), val.end());
  EXPECT_EQ(all.size(), 100u);  // disjoint and complete
  EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
  EXPECT_TRUE(std::is_sorted(val.begin(), val.end()));
  EXPECT_NE(val, std::vector<std::int64_t>(all.begin(), std::next(all.begin(), 20)));  // random, not the first 20
  // Samples keep the name of their place in the file, for error messages.
  EXPECT_EQ(parts.val->origin(3), "numbered.npy sample " + std::to_string(val[3]));
  EXPECT_NE(parts.val->description().find("20 held out for validation"), std::string::npos) << parts.val->description();
}

// The parts of an array set hold copies of their samples and no hold on the whole's arrays: once
// the caller lets go of the whole (sources.cpp does), the table is in memory once, not twice.
TEST(HoldOut, ThePartsOfAnArraySetLetTheWholesArraysGo) {
  auto whole = numbered(100);
  const auto memory = whole->tensors()->inputs.storage().getWeakStorageImpl();
  const auto parts = hold_out(whole, 0.2, 7);
  whole.reset();
  EXPECT_TRUE(memory.expired()) << "the whole set's arrays are still held";
  const auto val = labels_of(*parts.val);  // read from the part's own copy
  EXPECT_EQ(parts.val->origin(3), "numbered.npy sample " + std::to_string(val[3]));
  EXPECT_EQ(parts.train->layout().input_shape, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(values_of(parts.val->class_ids()), val);
}

// What a run keeps of its sources once a cache holds every sample: what they are, not the samples.
TEST(DescribedOnly, KeepsSizeLayoutAndNamesButNoSamples) {
  auto arrays = numbered(10);
  const auto memory = arrays->tensors()->inputs.storage().getWeakStorageImpl();
  std::shared_ptr<const Dataset> set = arrays;
  arrays.reset();
  set = described_only(set);
  EXPECT_TRUE(memory.expired()) << "the arrays are still held";
  EXPECT_EQ(set->size(), 10);
  EXPECT_EQ(set->layout().input_shape, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(set->description(), "numbered");
  EXPECT_EQ(set->origin(4), "numbered.npy sample 4");
  EXPECT_FALSE(set->tensors().has_value());
  EXPECT_FALSE(set->class_ids().has_value());
  float input = 0;
  std::int64_t label = 0;
  EXPECT_THROW(set->read(0, &input, &label), std::logic_error);
  EXPECT_EQ(described_only(set), set) << "a stand-in stands in for itself";
  const auto files = described_only(std::make_shared<NumberedFiles>(5));
  EXPECT_EQ(files->size(), 5);
  EXPECT_EQ(files->origin(2), "numbered files sample 2");
  EXPECT_EQ(described_only(nullptr), nullptr);
}

TEST(HoldOut, TheSplitIsAPureFunctionOfSizeFractionAndSeed) {
  const auto a = hold_out(numbered(100), 0.2, 7), b = hold_out(numbered(100), 0.2, 7), c = hold_out(numbered(100), 0.2, 8);
  EXPECT_EQ(labels_of(*a.val), labels_of(*b.val));
  EXPECT_NE(labels_of(*a.val), labels_of(*c.val));
}

TEST(HoldOut, ArraySetsStayArraysAndFileSetsAreReadThrough) {
  const auto arrays = hold_out(numbered(50), 0.1, 1);
  const auto tensors = arrays.train->tensors();
  ASSERT_TRUE(tensors.has_value());
  EXPECT_EQ(tensors->size(), 45);
  EXPECT_EQ(std::vector<std::int64_t>(tensors->targets.data_ptr<std::int64_t>(), tensors->targets.data_ptr<std::int64_t>() + 45),
            labels_of(*arrays.train));

  const auto files = hold_out(std::make_shared<NumberedFiles>(50), 0.1, 1);
  EXPECT_FALSE(files.train->tensors().has_value());
  EXPECT_EQ(labels_of(*files.val), labels_of(*arrays.val));  // the same split for the same size and seed
  EXPECT_EQ(files.val->origin(0), "file-" + std::to_string(labels_of(*files.val)[0]) + ".png");
}

// What class weights and the class-balance note count: each part's own labels.
TEST(HoldOut, EachPartKnowsItsClassIdsWhereTheWholeSetDoes) {
  const auto arrays = hold_out(numbered(50), 0.1, 1);
  EXPECT_EQ(values_of(arrays.train->class_ids()), labels_of(*arrays.train));
  EXPECT_EQ(values_of(arrays.val->class_ids()), labels_of(*arrays.val));

  const auto files = hold_out(std::make_shared<NumberedFiles>(50, /*labels_known=*/true), 0.1, 1);
  EXPECT_EQ(values_of(files.train->class_ids()), labels_of(*files.train));
  EXPECT_EQ(values_of(files.val->class_ids()), labels_of(*files.val));

  EXPECT_FALSE(hold_out(std::make_shared<NumberedFiles>(50), 0.1, 1).train->class_ids().has_value())
      << "a set that reads a label only with its sample";
  const auto regression = make_array_dataset({at::zeros({4, 1}), at::zeros({4, 1})}, "targets", "y.npy");
  EXPECT_FALSE(regression->class_ids().has_value()) << "float targets are not class ids";
}

// Classes keep their shares in both parts (a random split of 9 gave one class 1 sample of 3 and
// another 5), and training keeps at least one sample of every class.
TEST(HoldOut, ClassesKeepTheirSharesInBothParts) {
  // 76 of class 0, 20 of class 1 (every fifth), 3 of class 2 and 1 of class 3, interleaved.
  std::vector<std::int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(i % 5 == 4 ? 1 : 0);
  for (const int i : {7, 33, 61}) labels[static_cast<std::size_t>(i)] = 2;
  labels[50] = 3;
  const auto count = [](const std::vector<std::int64_t>& ids, std::int64_t c) { return std::count(ids.begin(), ids.end(), c); };
  const auto set = make_array_dataset({at::zeros({100, 1}), at::tensor(labels, at::kLong)}, "classes", "classes.npy");
  for (const std::uint64_t seed : {1, 2, 3}) {
    const auto parts = hold_out(set, 0.25, seed);
    const auto val = values_of(parts.val->class_ids()), train = values_of(parts.train->class_ids());
    ASSERT_EQ(val.size(), 25u);
    EXPECT_EQ(count(val, 0), 19) << "seed " << seed;  // 25 x 76/100
    EXPECT_EQ(count(val, 1), 5);                      // 25 x 20/100
    EXPECT_EQ(count(val, 2), 1);                      // 25 x 3/100 = 0.75: the largest remainder
    EXPECT_EQ(count(train, 3), 1) << "a class's only sample stays in training";
  }
  // Which samples of a class are held out is random: the seed moves them.
  const auto first = hold_out(set, 0.25, 1).val->origin(0), second = hold_out(set, 0.25, 2).val->origin(0);
  EXPECT_NE(first, second);
}

TEST(HoldOut, AnEmptyPartIsAUsageError) {
  try {
    hold_out(numbered(100), 0.001, 1);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("leaves no validation sample"), std::string::npos) << e.what();
  }
  try {
    hold_out(numbered(50), 0.99, 1);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("leaves no training sample"), std::string::npos) << e.what();
  }
  try {
    hold_out(numbered(1), 0.5, 1);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("data.val_fraction 0.5 of 1 sample leaves no training sample"), std::string::npos) << e.what();
  }
}

TEST(HoldOut, SourcesHoldOutOnlyWhereThereIsNoValidationData) {
  SourceSpec spec;
  spec.synthetic = {"classification", {4}, 3, 5};
  spec.samples = 40;
  spec.val_fraction = 0.25;
  spec.split_seed = 5;
  const auto held = open_sources(spec);
  EXPECT_EQ(held.train->size(), 30);
  ASSERT_TRUE(held.val);
  EXPECT_EQ(held.val->size(), 10);
  EXPECT_EQ(held.classes, 3);

  spec.val_samples = 16;  // synthetic validation data exists: holding out as well is refused
  try {
    open_sources(spec);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("there is validation data already: synthetic validation"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("data.val_samples: 0"), std::string::npos) << e.remedy();
  }
}

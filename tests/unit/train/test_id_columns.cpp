// The hint that names features that are row numbers or ids (id_column_hint).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"
#include "support/text_checks.hpp"
#include "train/data_checks/id_columns.hpp"

using gputrain::test_support::contains;
using namespace gputrain;
using namespace gputrain::train;

namespace {

const Config kDefaults;  // a named default: GCC warns of a Config{} temporary as maybe uninitialized

std::shared_ptr<const data::Dataset> features(const at::Tensor& inputs) {
  return data::make_array_dataset({inputs, at::zeros({inputs.size(0)}, at::kLong)}, "arrays", "arrays");
}

// 500 rows: a column 0..499 in order, a measurement, and a shuffled id from 10,000 on.
at::Tensor table() {
  at::manual_seed(0);
  auto x = at::randn({500, 3}) * 10 + 50;
  x.select(1, 0).copy_(at::arange(500));
  x.select(1, 2).copy_(at::randperm(500, at::kLong) + 10000);
  return x;
}

}  // namespace

TEST(IdColumns, ARowNumberAndANamedIdAreNamedWithTheSettingThatLeavesThemOut) {
  Config config;
  config.data.exclude = {"date"};
  const auto hint = id_column_hint(config, *features(table()), {"row", "temp", "customer_id"});
  EXPECT_EQ(
      hint,
      "features 'row' (0, 1, 2, ... down the file), 'customer_id' (a different whole number in every row) look like a row number or an "
      "id, which says nothing about new rows, yet makes validation look better than it is when the file is sorted (by date, by the "
      "label): if they are, leave them out with data.exclude: [date, row, customer_id]");
  // Features listed by hand: the fix is the list without them.
  config.data.features = {"row", "temp", "customer_id"};
  EXPECT_TRUE(
      contains(id_column_hint(config, *features(table()), {"row", "temp", "customer_id"}), "leave them out of data.features: [temp]"));
  // Arrays: by index, and the fix is in the array.
  const auto by_index = id_column_hint(kDefaults, *features(table()), {});
  EXPECT_TRUE(contains(by_index, "feature 0 (0, 1, 2, ... down the file) looks like a row number or an id")) << by_index;
  EXPECT_TRUE(contains(by_index, "drop that column from the inputs' array")) << by_index;
}

TEST(IdColumns, NamesThatSayIdAreRecognisedInTheUsualSpellings) {
  auto x = table();
  x.select(1, 0).copy_(at::randn({500}));  // no row number: only the name can tell
  for (const char* name : {"id", "ID", "user_id", "user id", "userId", "customerID", "index"})
    EXPECT_TRUE(contains(id_column_hint(kDefaults, *features(x), {"a", "b", name}), std::string("'") + name + "'")) << name;
  // Shuffled distinct whole numbers under another name are a measurement (sqm, price), not an id.
  for (const char* name : {"sqm", "idle", "Valid", "paid"})
    EXPECT_EQ(id_column_hint(kDefaults, *features(x), {"a", "b", name}), "") << name;
}

TEST(IdColumns, RisingValuesThatAreNotARowNumberAreLeftAlone) {
  auto x = table();
  x.select(1, 2).copy_(at::randn({500}));
  x.select(1, 0).copy_(at::arange(500) * 3600 + 1704067200);  // hourly timestamps in seconds: rising, not dense
  EXPECT_EQ(id_column_hint(kDefaults, *features(x), {"time", "b", "c"}), "");
  x.select(1, 0).copy_(at::arange(500) * 0.5);  // rising, densely, but not whole numbers
  EXPECT_EQ(id_column_hint(kDefaults, *features(x), {"time", "b", "c"}), "");
  auto gaps = table();  // rows held out for validation leave gaps: still a row number
  gaps.select(1, 0).copy_(at::arange(500) + at::arange(500).div(4, "floor"));
  EXPECT_TRUE(contains(id_column_hint(kDefaults, *features(gaps), {"n", "b", "c"}), "'n' (0, 1, 2, ... down the file)"));
  // Under 100 samples, a few rising numbers say too little.
  EXPECT_EQ(id_column_hint(kDefaults, *features(table().slice(0, 0, 99)), {"row", "b", "c"}), "");
  // Images are not vectors of columns.
  EXPECT_EQ(id_column_hint(kDefaults, *features(at::arange(500 * 4, at::kFloat).view({500, 1, 2, 2})), {}), "");
}

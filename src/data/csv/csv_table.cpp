#include "csv_table.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <iterator>

#include "csv_fill.hpp"
#include "csv_records.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/parallel_tasks.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data::csv {
namespace {

bool listed_categorical(const std::string& column, const CsvSpec& spec) {
  return std::find(spec.categorical.begin(), spec.categorical.end(), column) != spec.categorical.end();
}

// The settings that leave feature `column` out: without it in data.categorical (where it is listed;
// a PostgreSQL text column is a category by its type), and out of the features in the key the user
// chose (data.features when they listed them, else data.exclude).
std::string leaving_out_category(const std::string& column, const CsvSpec& spec, const std::vector<std::string>& features) {
  std::string category_key;
  if (listed_categorical(column, spec)) {
    std::vector<std::string> categorical;
    for (const auto& name : spec.categorical)
      if (name != column) categorical.push_back(name);
    category_key = categorical.empty() ? "remove data.categorical" : "data.categorical: [" + core::join(categorical) + "]";
  }
  const auto then = [&](const std::string& separator) { return category_key.empty() ? "" : category_key + separator; };
  if (spec.features_origin == "data.features" && !spec.features.empty()) {
    std::vector<std::string> kept;
    for (const auto& name : features)
      if (name != column) kept.push_back(name);
    if (kept.empty()) return then(", and ") + "give the model other features";
    return then(" and ") + "data.features: [" + core::join(kept) + "]";
  }
  auto excluded = spec.exclude;
  excluded.push_back(column);
  return then(" and ") + "data.exclude: [" + core::join(excluded) + "]";
}

// A column found to hold no categories worth one-hot columns each.
void check_categories(const Table& table, const std::string& column, const Coded& coded, const CsvSpec& spec) {
  const auto with_value =
      static_cast<std::int64_t>(std::count_if(coded.codes.begin(), coded.codes.end(), [](std::int32_t c) { return c >= 0; }));
  const auto values = coded.values.size();
  const auto where =
      "column '" + column + "' of '" + table.path + "' (" + (listed_categorical(column, spec) ? "data.categorical" : "text") + ") ";
  const auto leave = leaving_out_category(column, spec, table.features);
  if (values == 0)
    throw UsageError(
        where + "has no value: each of its " + core::counted(static_cast<std::int64_t>(coded.codes.size()), "row") + " misses one",
        "leave it out: " + leave);
  if (reads_as_categories(values, with_value)) return;
  const auto counts = core::counted(static_cast<std::int64_t>(values), "different value") + " in its " + core::counted(with_value, "row") +
                      (with_value < static_cast<std::int64_t>(coded.codes.size()) ? " with one" : "");
  if (values > kMostCategories && static_cast<std::int64_t>(2 * values) <= with_value)
    throw UsageError(
        where + "has " + counts + ": more than " + std::to_string(kMostCategories) + " categories, each an input column",
        "turn it into fewer numbers first (group its rare categories, or use each category's frequency), or leave it out: " + leave);
  throw UsageError(where + "has " + counts + ": a new value in most rows, as names, ids and free text have, not categories",
                   "leave it out: " + leave);
}

}  // namespace

Table join_tables(std::vector<Table> parts, const CsvSpec& spec) {
  Table joined;
  joined.path = parts.front().path;
  joined.features = parts.front().features;
  joined.category_of = parts.front().category_of;
  joined.unnamed = parts.front().unnamed;
  std::vector<at::Tensor> targets;
  for (auto& part : parts) {
    targets.push_back(part.targets);
    joined.rows += part.rows;
    std::move(part.not_utf8.begin(), part.not_utf8.end(), std::back_inserter(joined.not_utf8));
    std::move(part.chunks.begin(), part.chunks.end(), std::back_inserter(joined.chunks));
  }
  joined.targets = at::cat(targets);
  for (std::size_t f = 0; f < joined.features.size(); ++f) {
    const auto k = joined.category_of[f];
    if (k < 0) continue;
    std::vector<Coded> pieces;
    for (auto& part : parts) pieces.push_back(std::move(part.categories[static_cast<std::size_t>(k)]));
    // A validation table's: the training table's categories of that column (read_table found them by name).
    const auto known = std::find_if(spec.categories.begin(), spec.categories.end(),
                                    [&](const CsvCategories& c) { return c.column == joined.features[f]; });
    joined.categories.push_back(merge_categories(std::move(pieces), known == spec.categories.end() ? nullptr : &known->values));
  }
  return joined;
}

namespace {

// Said once per table: which files were read as Windows-1252, and how to make them UTF-8.
std::string not_utf8_note(const std::vector<std::string>& files) {
  const auto count = static_cast<std::int64_t>(files.size());
  return (count == 1 ? files.front() + " is" : core::counted(count, "file") + " are") +
         " not UTF-8: read as Windows-1252, as Excel writes CSV" + (count == 1 ? "" : " (first: " + files.front() + ")") +
         "; if a name reads wrong, convert the file to UTF-8 (iconv -f ITS-ENCODING -t UTF-8)";
}

// The columns as the model sees them: each number column, and each category's one-hot columns ("Sex=male").
void describe_columns(const Table& table, CsvColumns& columns) {
  columns.features = table.features;
  columns.unnamed = table.unnamed;
  columns.notes.clear();
  if (!table.not_utf8.empty()) columns.notes.push_back(not_utf8_note(table.not_utf8));
  columns.inputs.clear();
  columns.categories.clear();
  for (std::size_t f = 0; f < table.features.size(); ++f) {
    const auto k = table.category_of[f];
    if (k < 0) {
      columns.inputs.push_back(table.features[f]);
      continue;
    }
    const auto& coded = table.categories[static_cast<std::size_t>(k)];
    for (const auto& value : coded.values) columns.inputs.push_back(table.features[f] + "=" + value);
    columns.categories.push_back({table.features[f], coded.values, coded.unseen_rows, coded.unseen_example});
  }
}

}  // namespace

TensorDataset finish_table(Table table, const CsvSpec& spec, CsvColumns* columns) {
  auto filled = fill_missing(table, spec);
  std::vector<std::string> names;  // the categorical columns', in the features' order
  for (std::size_t f = 0; f < table.features.size(); ++f)
    if (table.category_of[f] >= 0) names.push_back(table.features[f]);
  if (spec.categories.empty())
    for (std::size_t k = 0; k < table.categories.size(); ++k) check_categories(table, names[k], table.categories[k], spec);
  if (columns) {
    describe_columns(table, *columns);
    columns->fill_values = std::move(filled.values);
    if (!filled.note.empty()) columns->notes.push_back(std::move(filled.note));
  }
  // Each row is its runs of number columns, copied whole (a table without categories: one run),
  // and each category's one-hot columns: a branch per feature per row would cost more than the copy.
  struct Run {
    std::int64_t from, to, length;
  };
  struct OneHot {
    std::int64_t at, width;
    const std::vector<std::int32_t>* codes;
  };
  std::vector<Run> runs;
  std::vector<OneHot> one_hots;
  std::int64_t width = 0, number = 0;
  for (std::size_t f = 0; f < table.features.size(); ++f) {
    const auto k = table.category_of[f];
    if (k >= 0) {
      const auto& coded = table.categories[static_cast<std::size_t>(k)];
      one_hots.push_back({width, static_cast<std::int64_t>(coded.values.size()), &coded.codes});
      width += one_hots.back().width;
      continue;
    }
    if (!runs.empty() && runs.back().to + runs.back().length == width) {
      ++runs.back().length;
    } else {
      runs.push_back({number, width, 1});
    }
    ++number;
    ++width;
  }
  auto inputs = at::empty({table.rows, width}, at::kFloat);
  std::vector<std::int64_t> first_row{0};  // each chunk's
  for (const auto& chunk : table.chunks) first_row.push_back(first_row.back() + chunk.rows);
  const auto write = [&](std::size_t c) {
    auto& chunk = table.chunks[c];
    const float* from = chunk.numbers.data();
    float* out = inputs.data_ptr<float>() + first_row[c] * width;
    for (std::int64_t r = first_row[c]; r < first_row[c + 1]; ++r, out += width, from += number) {
      for (const auto& run : runs) std::copy_n(from + run.from, run.length, out + run.to);
      for (const auto& one_hot : one_hots) {
        std::fill_n(out + one_hot.at, one_hot.width, 0.0F);
        const auto code = (*one_hot.codes)[static_cast<std::size_t>(r)];
        if (code >= 0) out[one_hot.at + code] = 1.0F;
      }
    }
    chunk = Chunk{};
  };
  // The chunks side by side on the parse's thread count: the copy is a whole pass over the data
  // (100,000 rows of 315 floats is 126 MB), the reading thread's largest after the parse.
  const auto threads = stretches_for(static_cast<std::size_t>(table.rows * width) * sizeof(float));
  core::parallel_tasks(static_cast<std::int64_t>(table.chunks.size()), static_cast<int>(threads),
                       [&](std::int64_t c) { write(static_cast<std::size_t>(c)); });
  return {inputs, table.targets};
}

}  // namespace gputrain::data::csv

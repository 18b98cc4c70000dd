#include "csv_categories.hpp"

#include <algorithm>
#include <numeric>

#include "csv_number.hpp"
#include "gputrain/core/text_encoding.hpp"

namespace gputrain::data::csv {
namespace {

// Up to this many values, a column reads as categories whatever the rows: a small file's colours.
constexpr std::size_t kFewValues = 50;

// Values sorted as text (and unique), re-sorted as numbers when each is one (1, 2, 10; 0.5, 1.5).
std::vector<std::string> sorted_categories(std::vector<std::string> values) {
  std::vector<double> numbers(values.size());
  bool all_numbers = true;
  for (std::size_t i = 0; i < values.size() && all_numbers; ++i) all_numbers = parse_number(values[i], numbers[i]);
  if (!all_numbers) return values;
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return numbers[a] < numbers[b]; });
  std::vector<std::string> sorted;
  for (const auto i : order) sorted.push_back(std::move(values[i]));
  return sorted;
}

}  // namespace

void CategoryCodes::add(std::string_view cell) {
  if (is_missing(cell)) {
    coded_.codes.push_back(-1);
    return;
  }
  key_.assign(cell.data(), cell.size());  // into the same buffer: no allocation per cell
  core::to_nfc(key_);                     // 'café' as macOS and as others write it: one category
  auto found = index_.find(key_);
  if (found == index_.end()) {
    found = index_.emplace(key_, static_cast<std::int32_t>(coded_.values.size())).first;
    coded_.values.push_back(key_);
  }
  coded_.codes.push_back(found->second);
}

Coded CategoryCodes::take() {
  index_.clear();
  return std::move(coded_);
}

Coded merge_categories(std::vector<Coded> pieces, const std::vector<std::string>* known) {
  Coded out;
  if (known) {
    out.values = *known;
  } else {
    std::vector<std::string> all;
    for (const auto& piece : pieces) all.insert(all.end(), piece.values.begin(), piece.values.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    out.values = sorted_categories(std::move(all));  // as text already
  }
  std::unordered_map<std::string, std::int32_t> index;
  for (std::size_t i = 0; i < out.values.size(); ++i) index.emplace(out.values[i], static_cast<std::int32_t>(i));
  std::size_t rows = 0;
  for (const auto& piece : pieces) rows += piece.codes.size();
  out.codes.reserve(rows);
  for (auto& piece : pieces) {
    // Each of the piece's categories' place in `out`, or -1 when it is not a known one.
    std::vector<std::int32_t> place(piece.values.size(), -1);
    for (std::size_t i = 0; i < piece.values.size(); ++i) {
      const auto found = index.find(piece.values[i]);
      if (found != index.end()) place[i] = found->second;
    }
    if (piece.unseen_rows > 0 && out.unseen_rows == 0) out.unseen_example = piece.unseen_example;  // a part merged before
    out.unseen_rows += piece.unseen_rows;
    for (const auto code : piece.codes) {
      const auto merged = code < 0 ? -1 : place[static_cast<std::size_t>(code)];
      out.codes.push_back(merged);
      if (code >= 0 && merged < 0 && out.unseen_rows++ == 0) out.unseen_example = piece.values[static_cast<std::size_t>(code)];
    }
    piece = Coded{};  // freed once merged
  }
  return out;
}

bool reads_as_categories(std::size_t values, std::int64_t rows) {
  return values <= kMostCategories && (values <= kFewValues || static_cast<std::int64_t>(2 * values) <= rows);
}

}  // namespace gputrain::data::csv

#include "id_columns.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>

#include "gputrain/core/units.hpp"
#include "leave_out_columns.hpp"

namespace gputrain::train {
namespace {

// Below this many samples, a few rising whole numbers are as likely a coincidence as an id.
constexpr std::int64_t kMinSamplesForIds = 100;

// The leading samples looked at: enough to be sure, and a bounded cost on a 10-million-row file.
constexpr std::int64_t kLookedAt = 65536;

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// "id", "ID", "user_id", "user id", "userId", "index": a name that says the column tells rows apart.
bool named_like_id(const std::string& name) {
  const auto lower = core::lower(name);
  if (lower == "id" || lower == "index" || ends_with(lower, "_id") || ends_with(lower, " id")) return true;
  // camelCase: "userId", "customerID"
  return name.size() > 2 && (ends_with(name, "Id") || ends_with(name, "ID")) &&
         std::islower(static_cast<unsigned char>(name[name.size() - 3]));
}

}  // namespace

std::string id_column_hint(const Config& config, const data::Dataset& train, const std::vector<std::string>& names) {
  const auto whole = train.tensors();
  if (!whole || whole->inputs.dim() != 2 || !at::isFloatingType(whole->inputs.scalar_type())) return "";
  const auto n = std::min(whole->size(), kLookedAt);
  if (n < kMinSamplesForIds) return "";
  const auto x = whole->inputs.slice(0, 0, n);
  // The first rows rule most columns out at once; the rest are checked one column at a time.
  const auto head = x.slice(0, 0, 8);
  const auto maybe_rising = ((head == head.round()).all(0) & (head.slice(0, 1) > head.slice(0, 0, 7)).all(0)).contiguous();
  const bool* const candidate = maybe_rising.data_ptr<bool>();
  const auto whole_numbers = [&](const at::Tensor& column) { return (column == column.round()).all().item<bool>(); };
  const auto rising = [&](const at::Tensor& column) {
    return (column.slice(0, 1) > column.slice(0, 0, n - 1)).all().item<bool>() && whole_numbers(column) &&
           (column[n - 1] - column[0]).item<double>() < 2.0 * static_cast<double>(n);
  };
  const auto all_different = [&](const at::Tensor& column) {
    const auto sorted = std::get<0>(column.sort());
    return whole_numbers(column) && (sorted.slice(0, 1) != sorted.slice(0, 0, n - 1)).all().item<bool>();
  };
  std::vector<std::string> shown, left_out;
  const auto width = x.size(1);
  for (std::int64_t i = 0; i < width; ++i) {
    const bool named = i < static_cast<std::int64_t>(names.size());
    const auto name = named ? names[static_cast<std::size_t>(i)] : std::string();
    const auto column = x.select(1, i);
    const bool by_order = candidate[i] && rising(column);
    if (!by_order && !(named && named_like_id(name) && all_different(column))) continue;
    const auto first = [&](std::int64_t row) { return core::format_fixed(x[row][i].item<double>(), 0); };
    shown.push_back((named ? "'" + name + "'" : "feature " + std::to_string(i)) +
                    (by_order ? " (" + first(0) + ", " + first(1) + ", " + first(2) + ", ... down the file)"
                              : " (a different whole number in every row)"));
    left_out.push_back(named ? name : std::to_string(i));
  }
  if (shown.empty()) return "";
  const bool one = shown.size() == 1;
  const std::string fix = std::string(one ? "if it is one, " : "if they are, ") + leave_out_fix(config.data, names, left_out);
  return std::string(one ? "feature " : "features ") + core::join(shown, ", ") + (one ? " looks" : " look") +
         " like a row number or an id, which says nothing about new rows, yet makes validation look better than it is when the file is "
         "sorted (by date, by the label): " +
         fix;
}

}  // namespace gputrain::train

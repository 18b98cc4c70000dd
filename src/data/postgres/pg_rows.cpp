#include "pg_rows.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "data/image_decode.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/dataset.hpp"

namespace gputrain::data::postgres {
namespace {

constexpr std::int64_t kChunkRows = 65536;      // rows of numbers per chunk (a few MB)
constexpr std::int64_t kImageChunkRows = 1024;  // decoded images per chunk
constexpr double kMaxClassId = 1e9;             // past it, a column of ids or values, not classes

// A value as the query would show it: -1, 0.5, 9.223372037e+18 (not -1.000000).
std::string shown_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

}  // namespace

RowDecoder::RowDecoder(const Selected& selected, DecodeSpec spec)
    : selected_(selected), spec_(std::move(spec)), recoder_(std::make_unique<TextRecoder>(spec_.client_encoding, "UTF8")) {
  lengths_.assign(selected_.features.size(), 0);
  if (spec_.vector_lengths) lengths_ = *spec_.vector_lengths;
  length_set_.assign(selected_.features.size(), spec_.vector_lengths != nullptr);
  for (const auto& use : selected_.features)
    if (use.kind == ColumnKind::text) codes_.emplace_back();
  appended_codes_.resize(codes_.size());
  for (const auto& use : selected_.features) {
    std::int32_t length = 0;
    const auto decode = fixed_decoder(use.column.type, &length);
    if (!decode) {
      fixed_.clear();
      break;
    }
    fixed_.push_back({use.index, length, decode});
  }
}

bool RowDecoder::add_fixed_features(const std::vector<Field>& fields) {
  const auto width = fixed_.size();
  if (chunks_.empty() || chunks_.back().rows == kChunkRows) {
    chunks_.emplace_back();
    chunks_.back().numbers.resize(static_cast<std::size_t>(kChunkRows) * width);  // rows past `rows` are not read
  }
  auto& chunk = chunks_.back();
  float* out = chunk.numbers.data() + static_cast<std::size_t>(chunk.rows) * width;
  bool whole = true;
  for (std::size_t f = 0; f < width; ++f) {
    const auto& column = fixed_[f];
    const auto& field = fields[column.index];
    if (field.length == column.length) {
      out[f] = static_cast<float>(column.decode(field.data));
    } else if (field.null() && spec_.keep_missing) {
      out[f] = std::numeric_limits<float>::quiet_NaN();
    } else if (field.null()) {
      ++nulls_[selected_.features[f].column.name];
      whole = false;
    } else {
      throw std::runtime_error("a field of " + std::to_string(field.length) + " bytes in a column of " + std::to_string(column.length));
    }
  }
  for (const auto& use : selected_.labels)
    if (fields[use.index].null()) {
      ++nulls_[use.column.name];
      whole = false;
    }
  if (whole) ++chunk.rows;
  return whole;
}

void RowDecoder::add(const std::vector<Field>& fields) {
  if (!fixed_.empty()) {
    if (!add_fixed_features(fields)) return;
    add_labels(fields);
    ++rows_;
    return;
  }
  bool has_null = false;
  const auto filled = [&](const Selected::Use& use) {  // a NULL that data.missing takes care of
    return spec_.keep_missing && !selected_.images() && (use.kind == ColumnKind::number || use.kind == ColumnKind::text);
  };
  for (const auto* uses : {&selected_.features, &selected_.labels})
    for (const auto& use : *uses)
      if (fields[use.index].null() && !(uses == &selected_.features && filled(use))) {
        ++nulls_[use.column.name];
        has_null = true;
      }
  if (has_null) return;  // counted: the error after the read names every column and its rows
  if (selected_.images()) {
    if (!add_image(fields[selected_.features[0].index])) return;
  } else {
    add_features(fields);
  }
  add_labels(fields);
  ++rows_;
}

void RowDecoder::add_features(const std::vector<Field>& fields) {
  row_.clear();
  std::size_t text = 0;
  for (std::size_t f = 0; f < selected_.features.size(); ++f) {
    const auto& use = selected_.features[f];
    const auto& field = fields[use.index];
    if (use.kind == ColumnKind::number) {
      row_.push_back(field.null() ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(number_of(use.column.type, field)));
    } else if (use.kind == ColumnKind::text) {
      codes_[text++].add(field.null() ? std::string_view() : text_in_utf8(field, use.column.name));
    } else {
      const auto n = append_vector(field, row_, spec_.what, use.column.name, rows_ + 1);
      if (!length_set_[f]) {
        lengths_[f] = n;
        length_set_[f] = true;
      } else if (n != lengths_[f]) {
        throw UsageError(spec_.what + "'s column '" + use.column.name + "' holds an array of " +
                             core::counted(static_cast<std::int64_t>(n), "number") + " in row " + std::to_string(rows_ + 1) + ", but " +
                             std::to_string(lengths_[f]) + (spec_.vector_lengths ? " in data.query's rows" : " in the rows before it"),
                         "every row must hold as many (one input each): pad or cut them in the query, e.g. " + use.column.name +
                             "[1:" + std::to_string(lengths_[f]) + "]");
      }
    }
  }
  if (chunks_.empty() || chunks_.back().rows == kChunkRows) {
    chunks_.emplace_back();
    chunks_.back().numbers.reserve(static_cast<std::size_t>(kChunkRows) * row_.size());
  }
  chunks_.back().numbers.insert(chunks_.back().numbers.end(), row_.begin(), row_.end());
  ++chunks_.back().rows;
}

std::string_view RowDecoder::text_in_utf8(const Field& field, const std::string& column) {
  if (!recoder_->converts()) return text_of(field);
  auto converted = (*recoder_)(text_of(field));
  if (!converted)
    throw UsageError(spec_.what + "'s column '" + column + "' holds text in row " + std::to_string(rows_ + 1) + " that is not " +
                         spec_.client_encoding + ", the client_encoding data.dsn names",
                     "name the encoding the database's text was written in as data.dsn's client_encoding (LATIN1, WIN1252, SJIS, ...)");
  converted_ = std::move(*converted);
  return converted_;
}

void RowDecoder::add_labels(const std::vector<Field>& fields) {
  if (!spec_.classification) {
    for (const auto& use : selected_.labels) regression_.push_back(static_cast<float>(number_of(use.column.type, fields[use.index])));
    return;
  }
  const auto& use = selected_.labels[0];
  const auto& field = fields[use.index];
  if (use.kind == ColumnKind::text) {
    label_names_.add(text_in_utf8(field, use.column.name));
    return;
  }
  const double id = number_of(use.column.type, field);
  if (!(id >= 0) || id != std::floor(id) || id > kMaxClassId)
    throw UsageError(
        spec_.what + "'s label column '" + use.column.name + "' holds " + shown_number(id) + " in row " + std::to_string(rows_ + 1) +
            ": class ids are whole numbers from 0 to " + core::with_commas(static_cast<std::uint64_t>(kMaxClassId)),
        "map the labels to 0, 1, 2, ... in the query (e.g. " + use.column.name + " - 1, or CASE ... END), or set data.task: regression");
  class_ids_.push_back(static_cast<std::int64_t>(id));
}

bool RowDecoder::add_image(const Field& field) {
  const auto h = spec_.image_size.at(0), w = spec_.image_size.at(1);
  if (image_chunks_.empty() || image_chunks_.back().rows == kImageChunkRows)
    image_chunks_.push_back({at::empty({kImageChunkRows, 3, h, w}, at::kByte), 0});
  auto& chunk = image_chunks_.back();
  auto* out = chunk.pixels.data_ptr<std::uint8_t>() + chunk.rows * 3 * h * w;
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(field.data), static_cast<std::size_t>(field.length), h, w, out);
  } catch (const SkippedSample& e) {
    if (undecoded_++ == 0) undecoded_example_ = "row " + std::to_string(rows_ + undecoded_) + ": " + e.what();
    return false;
  }
  ++chunk.rows;
  return true;
}

void RowDecoder::append(RowDecoder&& later) {
  for (std::size_t f = 0; f < lengths_.size(); ++f) {
    if (!later.length_set_[f]) continue;
    if (length_set_[f] && later.lengths_[f] != lengths_[f]) {
      const auto& name = selected_.features[f].column.name;
      throw UsageError(spec_.what + "'s column '" + name + "' holds arrays of " + std::to_string(lengths_[f]) +
                           " numbers in some rows and " + std::to_string(later.lengths_[f]) + " in others",
                       "every row must hold as many (one input each): pad or cut them in the query, e.g. " + name +
                           "[1:" + std::to_string(std::min(lengths_[f], later.lengths_[f])) + "]");
    }
    lengths_[f] = later.lengths_[f];
    length_set_[f] = true;
  }
  rows_ += later.rows_;
  for (auto& chunk : later.chunks_) chunks_.push_back(std::move(chunk));
  for (std::size_t t = 0; t < codes_.size(); ++t) {
    appended_codes_[t].push_back(later.codes_[t].take());
    for (auto& piece : later.appended_codes_[t]) appended_codes_[t].push_back(std::move(piece));
  }
  appended_label_names_.push_back(later.label_names_.take());
  for (auto& piece : later.appended_label_names_) appended_label_names_.push_back(std::move(piece));
  class_ids_.insert(class_ids_.end(), later.class_ids_.begin(), later.class_ids_.end());
  regression_.insert(regression_.end(), later.regression_.begin(), later.regression_.end());
  for (auto& chunk : later.image_chunks_) image_chunks_.push_back(std::move(chunk));
  for (const auto& [column, rows] : later.nulls_) nulls_[column] += rows;
  if (undecoded_ == 0 && later.undecoded_ > 0) undecoded_example_ = later.undecoded_example_;
  undecoded_ += later.undecoded_;
}

void RowDecoder::throw_nulls() const {
  if (nulls_.empty()) return;
  const auto is_label = [&](const std::string& column) {
    return std::any_of(selected_.labels.begin(), selected_.labels.end(), [&](const auto& use) { return use.column.name == column; });
  };
  const auto is_number = [&](const std::string& column) {
    return std::any_of(selected_.features.begin(), selected_.features.end(),
                       [&](const auto& use) { return use.column.name == column && use.kind == ColumnKind::number; });
  };
  std::string counts, kept, feature, number;
  for (const auto& [column, rows] : nulls_) {
    counts += (counts.empty() ? "" : ", ") + ("'" + column + "' in " + core::counted(rows, "row"));
    kept += (kept.empty() ? "" : " AND ") + column + " IS NOT NULL";
    if (feature.empty() && !is_label(column)) feature = column;
    if (number.empty() && is_number(column)) number = column;
  }
  // A label cannot be filled in (COALESCE(label, 0) would make them class 0), nor an array with a 0.
  std::string fix = "leave those rows out: WHERE " + kept;
  if (!number.empty()) fix = "replace them in the query, e.g. COALESCE(" + number + ", 0), or " + fix;
  if (feature.empty())
    fix += " (a sample needs its label; data.missing fills features only)";
  else
    fix += spec_.keep_missing ? " (data.missing fills number and text columns, not arrays or images)"
                              : " (or set data.missing: drop, mean or zero for NULL numbers and text)";
  throw UsageError(spec_.what + "'s rows hold NULLs, which the model cannot read: " + counts, fix);
}

csv::Table RowDecoder::table() {
  throw_nulls();
  csv::Table t;
  t.path = spec_.what;
  t.rows = rows_;
  t.chunks = std::move(chunks_);
  std::size_t text = 0;
  for (std::size_t f = 0; f < selected_.features.size(); ++f) {
    const auto& use = selected_.features[f];
    if (use.kind == ColumnKind::vector) {
      for (std::size_t i = 0; i < lengths_[f]; ++i) {
        t.features.push_back(use.column.name + "[" + std::to_string(i) + "]");
        t.category_of.push_back(-1);
      }
      continue;
    }
    t.features.push_back(use.column.name);
    t.category_of.push_back(use.kind == ColumnKind::text ? static_cast<int>(t.categories.size()) : -1);
    if (use.kind != ColumnKind::text) continue;
    const std::vector<std::string>* known = nullptr;
    if (spec_.categories)
      for (const auto& column : *spec_.categories)
        if (column.column == use.column.name) known = &column.values;
    std::vector<csv::Coded> pieces;
    pieces.push_back(codes_[text].take());
    for (auto& piece : appended_codes_[text]) pieces.push_back(std::move(piece));
    ++text;
    t.categories.push_back(csv::merge_categories(std::move(pieces), known));
  }
  t.targets = targets();
  return t;
}

at::Tensor RowDecoder::images() {
  throw_nulls();
  const auto h = spec_.image_size.at(0), w = spec_.image_size.at(1);
  auto out = at::empty({rows_, 3, h, w}, at::kByte);
  std::int64_t at = 0;
  for (auto& chunk : image_chunks_) {  // each freed once copied: the images are held once, plus a chunk
    out.narrow(0, at, chunk.rows).copy_(chunk.pixels.narrow(0, 0, chunk.rows));
    at += chunk.rows;
    chunk.pixels = at::Tensor();
  }
  image_chunks_.clear();
  return out;
}

at::Tensor RowDecoder::targets() {
  if (targets_.defined()) return targets_;
  if (!spec_.classification) {
    const auto k = static_cast<std::int64_t>(selected_.labels.size());
    targets_ = at::from_blob(regression_.data(), {rows_, k}, at::kFloat).clone();
  } else if (selected_.labels[0].kind == ColumnKind::text) {
    std::vector<csv::Coded> pieces;
    pieces.push_back(label_names_.take());
    for (auto& piece : appended_label_names_) pieces.push_back(std::move(piece));
    auto coded = csv::merge_categories(std::move(pieces), spec_.class_names);
    const auto& column = selected_.labels[0].column.name;
    if (coded.unseen_rows > 0)
      throw UsageError(spec_.what + "'s label column '" + column + "' holds '" + coded.unseen_example + "' (in " +
                           core::counted(coded.unseen_rows, "row") + "), which is not among data.query's labels",
                       "train on rows of every class, or leave those rows out of " + spec_.what);
    std::vector<std::int64_t> ids(coded.codes.begin(), coded.codes.end());
    if (std::find(ids.begin(), ids.end(), -1) != ids.end())
      throw UsageError(spec_.what + "'s label column '" + column + "' is empty in some rows",
                       "leave them out: WHERE " + column + " <> '', or give them a class");
    class_names_ = coded.values;
    targets_ = at::tensor(ids, at::kLong);
  } else {
    targets_ = at::tensor(class_ids_, at::kLong);
  }
  return targets_;
}

}  // namespace gputrain::data::postgres

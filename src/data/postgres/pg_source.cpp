// data.source postgres: which columns are features and labels (as for CSV: data.features,
// data.exclude, data.labels), the rows streamed in over binary COPY and decoded as they come, and
// the datasets made from them. Text columns are categories (one-hot inputs), arrays are one input
// per element, a lone bytea column is images.
#include "pg_source.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "data/label_column.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/dataset.hpp"
#include "pg_rows.hpp"
#include "pg_streams.hpp"

namespace gputrain::data::postgres {
namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The reader's kind of a column's type: kind_of's, or text for an enum, whose values travel as
// their labels, as text does.
std::optional<ColumnKind> column_kind(Connection& conn, std::uint32_t type) {
  if (const auto kind = kind_of(type)) return kind;
  if (conn.try_value("SELECT typtype FROM pg_type WHERE oid = " + std::to_string(type)) == std::optional<std::string>("e"))
    return ColumnKind::text;
  return std::nullopt;
}

// The column named `name` among the query's, or a UsageError naming what it returns.
std::size_t index_of(const std::vector<Column>& columns, const std::string& name, const std::string& key, const std::string& what) {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  std::vector<std::string> names;
  for (const auto& c : columns) names.push_back(c.name);
  const auto returned = names.empty() ? std::string("it returns no columns") : "it returns: " + core::join_first(names, 40);
  throw UsageError(key + " names column '" + name + "', which " + what + " does not return; " + returned,
                   (names.empty() ? "" : "use one of those names, or ") + std::string("add the column to ") + what + "'s SELECT");
}

Selected::Use label_use(Connection& conn, const std::vector<Column>& columns, const std::string& name, bool classification,
                        const std::string& what) {
  const auto i = index_of(columns, name, "data.labels", what);
  const auto kind = column_kind(conn, columns[i].type);
  const bool fits = kind == ColumnKind::number || (classification && kind == ColumnKind::text);
  if (!fits)
    throw UsageError(what + "'s label column '" + name + "' is " + conn.type_name(columns[i].type) + ", which cannot be " +
                         (classification ? "a class" : "a regression target"),
                     classification ? "select the class as an integer id (from 0) or as its name (text)"
                                    : "select the target as a number (cast it: " + name + "::float8)");
  return {columns[i], i, *kind};
}

// What to make of a column of a type the reader does not take, as SQL the server runs: no cast
// makes a number of a date or time (EXTRACT does), a json field is one, an id is no feature, and
// a cast to float8 is offered only where the server has one (pg_cast).
std::string cast_advice(Connection& conn, const Column& column) {
  // pg_type.dat: date, time, timestamp, timestamptz, interval, timetz; json, jsonb; uuid; money.
  constexpr std::uint32_t kDate = 1082, kTime = 1083, kTimestamp = 1114, kTimestampTz = 1184, kInterval = 1186, kTimeTz = 1266, kJson = 114,
                          kJsonb = 3802, kUuid = 2950, kMoney = 790;
  const auto name = conn.quoted_identifier(column.name);
  const auto leave_out = "leave it out (data.exclude: [" + column.name + "])";
  switch (column.type) {
    case kDate:
    case kTime:
    case kTimestamp:
    case kTimestampTz:
    case kInterval:
    case kTimeTz:
      return "make a number of it in the query: EXTRACT(EPOCH FROM " + name + ")::float8 AS " + name + " (seconds), EXTRACT(DOY FROM " +
             name + ") or EXTRACT(HOUR FROM " + name + ") for a season or a time of day, or " + leave_out;
    case kJson:
    case kJsonb:
      return "select its fields as numbers: (" + name + "->>'field')::float8 AS " + conn.quoted_identifier(column.name + "_field") +
             ", one per field, or " + leave_out;
    case kUuid:
      return "an id tells the model nothing about a row: " + leave_out;
    case kMoney:
      return "select it as a number: " + name + "::numeric AS " + name + ", or " + leave_out;
    default:
      break;
  }
  if (conn.try_value("SELECT 1 FROM pg_cast WHERE castsource = " + std::to_string(column.type) + " AND casttarget = 'float8'::regtype"))
    return "cast it in the query: " + name + "::float8 AS " + name + ", or " + leave_out;
  return "no cast makes a number of it: select numbers the query computes from it, its text as a category (" + name + "::text AS " + name +
         "), or " + leave_out;
}

Selected::Use feature_use(Connection& conn, const std::vector<Column>& columns, std::size_t i, const SourceSpec& spec,
                          const std::string& what) {
  const auto& column = columns[i];
  const auto kind = column_kind(conn, column.type);
  if (!kind)
    throw UsageError(what + "'s column '" + column.name + "' is " + conn.type_name(column.type) + ", which gputrain does not read",
                     cast_advice(conn, column));
  if (listed(spec.categorical, column.name) && kind != ColumnKind::text)
    throw UsageError("data.categorical lists '" + column.name + "', which is " + conn.type_name(column.type) + ", not text",
                     "select it as text (" + column.name + "::text) to read it as categories; text columns are categories already");
  return {column, i, *kind};
}

// Columns are found by name, so two of one name (SELECT a.x, b.x ...) would be one read twice.
void require_distinct_names(const std::vector<Column>& columns, const std::string& what) {
  for (std::size_t i = 0; i < columns.size(); ++i)
    for (std::size_t j = i + 1; j < columns.size(); ++j)
      if (columns[i].name == columns[j].name)
        throw UsageError(what + " returns two columns named '" + columns[i].name + "' (columns " + std::to_string(i + 1) + " and " +
                             std::to_string(j + 1) + "), and gputrain finds columns by name",
                         "give each its own name in the query (... AS " + columns[i].name + "_2), or select it once");
}

// The features and labels among a query's columns, as data.features, data.exclude and data.labels say.
Selected select_columns(Connection& conn, const std::vector<Column>& columns, const SourceSpec& spec, const std::string& what) {
  const bool classification = spec.task == "classification";
  require_distinct_names(columns, what);
  Selected s;
  if (spec.labels.empty()) {
    std::vector<std::string> names;
    for (const auto& column : columns) names.push_back(column.name);
    const auto named = column_named_like_a_label(names);
    throw UsageError(
        "data.labels is not set for the postgres source",
        (named.empty() ? "set data.labels to the label column's name" : "set data.labels: " + named + " (the column named like a label)") +
            "; " + what + " returns the columns " + core::join(names));
  }
  if (classification && spec.labels.size() != 1)
    throw UsageError("data.labels names " + std::to_string(spec.labels.size()) + " columns; a classification reads one",
                     "set data.labels to the class column, or data.task: regression for several targets");
  for (const auto& name : spec.labels) s.labels.push_back(label_use(conn, columns, name, classification, what));
  for (const auto& name : spec.exclude) index_of(columns, name, "data.exclude", what);
  for (const auto& name : spec.categorical) index_of(columns, name, "data.categorical", what);
  if (!spec.features.empty()) {
    for (const auto& name : spec.features) {
      if (listed(spec.labels, name))
        throw UsageError("data.features lists the label column '" + name + "': the model would read its answer",
                         "leave '" + name + "' out of data.features");
      s.features.push_back(feature_use(conn, columns, index_of(columns, name, "data.features", what), spec, what));
    }
  } else {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (!listed(spec.labels, columns[i].name) && !listed(spec.exclude, columns[i].name))
        s.features.push_back(feature_use(conn, columns, i, spec, what));
  }
  if (s.features.empty())
    throw UsageError(what + " returns no feature column besides the labels", "select the feature columns too, or check data.exclude");
  for (const auto& use : s.features)
    if (use.kind == ColumnKind::bytes && s.features.size() > 1)
      throw UsageError(what + "'s column '" + use.column.name + "' holds bytes (bytea: images), which are a sample on their own",
                       "select the image column and the label alone, or leave it out with data.exclude: [" + use.column.name + "]");
  return s;
}

// The training features by name among data.val_query's columns: one it lacks is named as the
// training query's (data.features only when the user listed them).
void require_training_features(const std::vector<Column>& val_columns, const std::vector<std::string>& names, const SourceSpec& spec) {
  if (!spec.features.empty()) return;  // index_of names data.features
  std::vector<std::string> returned;
  for (const auto& c : val_columns) returned.push_back(c.name);
  for (const auto& name : names)
    if (!listed(returned, name))
      throw UsageError("data.query's feature column '" + name + "' is not among data.val_query's columns (" + core::join(returned) + ")",
                       "select it in data.val_query too, or leave it out of the features: data.exclude: [" + name + "]");
}

// Reads `query`'s rows through a decoder, telling `spec.row_progress` how far it is.
ReadRows read_rows(CopyStreams& streams, const std::string& query, const std::string& what, RowDecoder& decoder, const SourceSpec& spec) {
  const auto read = streams.read(query, what, decoder, [&](std::int64_t rows, std::int64_t estimated, std::uint64_t bytes) {
    if (spec.row_progress) spec.row_progress(what, rows, estimated, bytes);
  });
  if (decoder.rows() == 0 && decoder.undecoded() == 0 && read.tuples == 0)
    throw UsageError(what + " returned no rows", "check its WHERE clause (psql -c 'SELECT count(*) FROM (...) AS q' counts them)");
  return read;
}

// The data line's words for a query's rows: "PostgreSQL user@host:port/db data.query (800 rows)".
std::string described(const Connection& conn, const std::string& key, std::int64_t rows, int streams) {
  return "PostgreSQL " + conn.where() + " " + key + " (" + core::counted(rows, "row") +
         (streams > 1 ? ", read over " + std::to_string(streams) + " COPY streams" : "") + ")";
}

std::string hex(std::uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = digits[value & 15];
  return out;
}

// Every image left out as undecodable would leave no samples, which later reads as a batch-size problem.
void refuse_no_image_decoded(const RowDecoder& rows, const std::string& what) {
  if (rows.rows() > 0 || rows.undecoded() == 0) return;
  throw UsageError(
      "none of the " + core::counted(rows.undecoded(), "image") + " of " + what + " decodes (" + rows.undecoded_example() + ")",
      "the bytea column must hold whole JPEG or PNG files, as read from disk (pg_read_binary_file, or psycopg's bytes); "
      "check how the rows were written");
}

// The training rows as a dataset: the decoded images, or the columns as features (CSV's rules).
TensorDataset training_set(RowDecoder& train, const Selected& selected, const SourceSpec& spec, CsvColumns& columns) {
  if (selected.images()) {
    refuse_no_image_decoded(train, "data.query");
    return {train.images(), train.targets()};
  }
  CsvSpec csv{{}, spec.labels, spec.task == "classification"};
  csv.missing = spec.missing;
  auto table = train.table();
  csv.features = table.features;
  if (spec.features.empty()) csv.features_origin = "data.query's columns";  // a fix then names data.exclude
  csv.exclude = spec.exclude;
  return csv::finish_table(std::move(table), csv, &columns);
}

}  // namespace

Sources open_postgres(const SourceSpec& spec) {
  Sources out;
  Connection conn(spec.dsn);
  // One snapshot for the training and the validation rows: rows another client commits meanwhile
  // are in neither, so the two never overlap by accident.
  conn.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  CopyStreams streams(conn, spec.dsn, spec.streams);
  const auto selected = select_columns(conn, conn.columns_of(spec.query, "data.query"), spec, "data.query");
  const bool classification = spec.task == "classification";
  DecodeSpec decode{classification, "data.query", spec.image_size};
  decode.keep_missing = spec.missing != "error";
  decode.client_encoding = conn.client_encoding();
  RowDecoder train(selected, decode);
  const auto train_read = read_rows(streams, spec.query, "data.query", train, spec);
  out.copy_streams = train_read.streams;
  out.provenance = {
      {"data.query", spec.query}, {"data.rows", std::to_string(train.rows())}, {"data.checksum", hex(train_read.fingerprint)}};
  CsvColumns columns;
  const auto train_set = training_set(train, selected, spec, columns);
  out.class_names = train.class_names();
  out.train = make_array_dataset(train_set, described(conn, "data.query", train_set.size(), train_read.streams), "data.query");
  if (train.undecoded() > 0)
    out.notes.push_back("note: " + core::counted(train.undecoded(), "row") + " of data.query held images that did not decode, left out (" +
                        train.undecoded_example() + ")");
  if (!spec.val_query.empty()) {
    // The training query's feature columns, found by name: the validation query may order them otherwise.
    auto val_spec = spec;
    val_spec.features.clear();
    val_spec.exclude.clear();
    for (const auto& use : selected.features) val_spec.features.push_back(use.column.name);
    const auto val_columns_found = conn.columns_of(spec.val_query, "data.val_query");
    require_training_features(val_columns_found, val_spec.features, spec);
    const auto val_selected = select_columns(conn, val_columns_found, val_spec, "data.val_query");
    DecodeSpec val_decode{classification,   "data.val_query",        spec.image_size,
                          &out.class_names, &train.vector_lengths(), &columns.categories};
    val_decode.keep_missing = decode.keep_missing;
    val_decode.client_encoding = decode.client_encoding;
    if (!classification || selected.labels[0].kind != ColumnKind::text) val_decode.class_names = nullptr;
    RowDecoder val(val_selected, val_decode);
    const auto val_read = read_rows(streams, spec.val_query, "data.val_query", val, spec);
    out.provenance["data.val_query"] = spec.val_query;
    out.provenance["data.val_rows"] = std::to_string(val.rows());
    out.provenance["data.val_checksum"] = hex(val_read.fingerprint);
    TensorDataset val_set;
    if (val_selected.images()) {
      refuse_no_image_decoded(val, "data.val_query");
      val_set = {val.images(), val.targets()};
    } else {
      CsvSpec val_csv{{}, spec.labels, classification, ',', "data.query's feature columns", {}, {}, columns.categories};
      val_csv.missing = spec.missing;
      for (const auto& fill : columns.fill_values) val_csv.fill_values.push_back(fill.second);
      auto table = val.table();
      val_csv.features = table.features;
      CsvColumns val_columns;
      val_set = csv::finish_table(std::move(table), val_csv, &val_columns);
      out.notes.insert(out.notes.end(), val_columns.notes.begin(), val_columns.notes.end());
    }
    out.val = make_array_dataset(val_set, described(conn, "data.val_query", val_set.size(), val_read.streams), "data.val_query");
  }
  conn.run("COMMIT");
  out.notes.insert(out.notes.end(), streams.notes().begin(), streams.notes().end());
  if (classification) {
    const auto max_id = [](const TensorDataset& set) { return set.size() > 0 ? set.targets.max().item<std::int64_t>() + 1 : 0; };
    out.classes = out.class_names.empty() ? std::max(max_id(train_set), out.val ? max_id(*out.val->tensors()) : 0)
                                          : static_cast<std::int64_t>(out.class_names.size());
  }
  out.feature_names = columns.inputs;
  out.feature_columns = columns.features;
  out.categories = columns.categories;
  out.fill_values = columns.fill_values;
  out.notes.insert(out.notes.begin(), columns.notes.begin(), columns.notes.end());
  return out;
}

}  // namespace gputrain::data::postgres

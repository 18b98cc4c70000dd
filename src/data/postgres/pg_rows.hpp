#pragma once
// A query's tuples decoded as they stream in: numbers and arrays into the CSV reader's chunks of
// floats, text into numbered categories, the labels into class ids (or names) or targets, bytea
// into decoded images. NULLs are counted by column, for one error that names them all.

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/csv/csv_table.hpp"
#include "pg_binary.hpp"
#include "pg_connection.hpp"
#include "pg_text.hpp"

namespace gputrain::data::postgres {

/// The columns a query's tuples give the model: each with its place in the tuple.
struct Selected {
  struct Use {
    Column column;
    std::size_t index = 0;  ///< in the tuple
    ColumnKind kind = ColumnKind::number;
  };
  std::vector<Use> features, labels;
  bool images() const { return features.size() == 1 && features[0].kind == ColumnKind::bytes; }
};

/// What decoding needs besides the columns.
struct DecodeSpec {
  bool classification = true;
  std::string what = "data.query";                           ///< the key the rows come from, for errors
  std::vector<std::int64_t> image_size{224, 224};            ///< images: height, width
  const std::vector<std::string>* class_names = nullptr;     ///< a validation query's: the training query's label names
  const std::vector<std::size_t>* vector_lengths = nullptr;  ///< a validation query's: the training query's array lengths
  const std::vector<CsvCategories>* categories = nullptr;    ///< a validation query's: the training query's categories
  /// data.missing other than error: a NULL number feature is read as NaN (csv_fill.hpp fills or
  /// drops it) and a NULL text feature as no category; NULL labels and arrays stay errors.
  bool keep_missing = false;
  std::string client_encoding = "UTF8";  ///< the session's (Connection::client_encoding): text is converted to UTF-8
};

class RowDecoder {
 public:
  RowDecoder(const Selected& selected, DecodeSpec spec);
  /// One tuple, in the query's column order.
  void add(const std::vector<Field>& fields);
  std::int64_t rows() const { return rows_; }
  /// The rows another decoder of the same columns read (the next stretch of the same query's
  /// rows, read in parallel) after these, taken over without copying. Arrays of another length
  /// there are a UsageError, as they are within one stream.
  void append(RowDecoder&& later);
  /// A decoder of the same columns with the same settings, for another stream of the rows.
  RowDecoder sibling() const { return RowDecoder(selected_, spec_); }

  /// The rows as the CSV reader's table (features; finish_table spreads the categories), and the
  /// labels. Throws UsageError when a column held NULLs, naming each and its rows.
  csv::Table table();
  /// Images [rows, 3, height, width] uint8 (images() only), chunk by chunk into one tensor.
  at::Tensor images();
  /// Class ids int64 [rows], or regression targets float32 [rows, labels].
  at::Tensor targets();
  /// Text labels' names, sorted (the ids index them); empty for numeric labels.
  const std::vector<std::string>& class_names() const { return class_names_; }
  /// Each array feature's length, in the features' order (0 for other columns).
  const std::vector<std::size_t>& vector_lengths() const { return lengths_; }
  /// Rows left out because their image did not decode, and the first's reason.
  std::int64_t undecoded() const { return undecoded_; }
  const std::string& undecoded_example() const { return undecoded_example_; }

 private:
  void add_features(const std::vector<Field>& fields);
  // Every feature a fixed-size number: decoded straight into the chunk, NULLs counted on the way.
  bool add_fixed_features(const std::vector<Field>& fields);
  void add_labels(const std::vector<Field>& fields);
  bool add_image(const Field& field);
  void throw_nulls() const;
  // A text field in UTF-8: as it is, or converted from data.dsn's client_encoding (valid until the next call).
  std::string_view text_in_utf8(const Field& field, const std::string& column);

  Selected selected_;
  DecodeSpec spec_;
  std::int64_t rows_ = 0;
  std::vector<csv::Chunk> chunks_;
  std::vector<csv::CategoryCodes> codes_;                // one per text feature
  std::vector<std::vector<csv::Coded>> appended_codes_;  // per text feature: appended decoders' codes, in order
  std::vector<std::size_t> lengths_;
  std::vector<bool> length_set_;
  std::vector<std::int64_t> class_ids_;
  csv::CategoryCodes label_names_;
  std::vector<csv::Coded> appended_label_names_;
  std::vector<std::string> class_names_;
  std::vector<float> regression_;
  struct ImageChunk {
    at::Tensor pixels;
    std::int64_t rows = 0;
  };
  std::vector<ImageChunk> image_chunks_;
  std::map<std::string, std::int64_t> nulls_;  // by column
  std::int64_t undecoded_ = 0;
  std::string undecoded_example_;
  std::vector<float> row_;  // the row being decoded
  struct Fixed {
    std::size_t index;
    std::int32_t length;
    NumberDecoder decode;
  };
  std::vector<Fixed> fixed_;  // one per feature when all are fixed-size numbers; else empty
  at::Tensor targets_;        // made once, from the labels read
  std::unique_ptr<TextRecoder> recoder_;
  std::string converted_;  // the last text converted
};

}  // namespace gputrain::data::postgres

#pragma once
// How the rows of one CSV file are read once its header is known, and the fixes errors offer in
// the user's own terms (the data.exclude or data.features line, a pandas line that rewrites the
// file): shared by the parse (csv_format.cpp) and the count of missing values (csv_missing.cpp).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gputrain::data::csv {

/// What the rows of a file are read as: fixed once its header is read, shared by every stretch.
struct RowFormat {
  const std::string& path;
  char delimiter;
  const std::vector<std::string>& header;
  const std::vector<std::size_t>& feature_columns;  // the features read as numbers
  const std::vector<std::size_t>& label_columns;
  bool classification;
  bool label_names;                                  // classes by name ("setosa"), not id: the first row decides
  const std::map<std::string, std::int64_t>* known;  // a validation file's classes: the training file's
  std::vector<int> feature_slot;                     // per header column: its place among the features, or -1
  bool features_listed;                              // the user listed data.features (else: all columns but data.exclude)
  const std::vector<std::string>& excluded;          // data.exclude
  const std::vector<std::size_t>& model_columns;     // every feature, numbers and categories, in the model's order
  const std::vector<std::size_t>& category_columns;  // the features of categories (data.categorical), in that order
  const std::vector<std::string>& categorical;       // data.categorical, as the user wrote it
  bool keep_missing = false;                         // data.missing other than error: a missing feature is read as NaN
};

/// How many columns a fix names before "... (N in all)": a file of 30,000 text columns made a
/// fix of 750 KB.
inline constexpr std::size_t kNamedColumns = 12;

/// How a user leaves `columns` out, in the key they use: " with data.features: [...]" without
/// them when they listed the features, else " with data.exclude: [...]" with them; "" when no
/// feature is left. At most kNamedColumns names.
std::string leaving_out(const RowFormat& format, const std::vector<std::size_t>& columns);
std::string leaving_out(const RowFormat& format, std::size_t column);

/// A pandas line that reads the file, applies `change` to the DataFrame `df` and writes
/// <stem><suffix>.csv beside it, and that file's name. Columns without a name (pandas' own index,
/// the empty one after a trailing delimiter) are not read, as gputrain leaves them out: pandas
/// would call them 'Unnamed: 0' and write them back with that name.
std::pair<std::string, std::string> pandas_rewrite(const RowFormat& format, const std::string& read_options, const std::string& change,
                                                   const std::string& suffix);

}  // namespace gputrain::data::csv

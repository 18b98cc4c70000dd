#include "csv_row_format.hpp"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "gputrain/core/units.hpp"

namespace gputrain::data::csv {

std::string leaving_out(const RowFormat& format, const std::vector<std::size_t>& columns) {
  if (!format.features_listed) {
    auto excluded = format.excluded;
    for (const auto c : columns) excluded.push_back(format.header[c]);
    return " with data.exclude: [" + core::join_first(excluded, kNamedColumns) + "]";
  }
  std::vector<std::string> others;
  const std::unordered_set<std::size_t> out(columns.begin(), columns.end());
  for (const auto other : format.model_columns)
    if (out.count(other) == 0) others.push_back(format.header[other]);
  return others.empty() ? std::string() : " with data.features: [" + core::join_first(others, kNamedColumns) + "]";
}

std::string leaving_out(const RowFormat& format, std::size_t c) { return leaving_out(format, std::vector<std::size_t>{c}); }

std::pair<std::string, std::string> pandas_rewrite(const RowFormat& format, const std::string& read_options, const std::string& change,
                                                   const std::string& suffix) {
  std::filesystem::path name(format.path);  // data.csv.gz -> data<suffix>.csv
  if (name.extension() == ".gz") name.replace_extension();
  const auto written = name.replace_extension().string() + suffix + ".csv";
  const bool unnamed = std::find(format.header.begin(), format.header.end(), std::string()) != format.header.end();
  const std::string sep = format.delimiter == ';' ? ", sep=';'" : format.delimiter == '\t' ? ", sep='\\t'" : "";
  return {"python3 -c \"import pandas as pd; df = pd.read_csv('" + format.path + "'" + sep + read_options +
              (unnamed ? ", usecols=lambda c: not c.startswith('Unnamed: ')" : "") + "); df" + change + ".to_csv('" + written +
              "', index=False)\"",
          written};
}

}  // namespace gputrain::data::csv

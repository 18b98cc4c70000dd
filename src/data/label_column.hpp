#pragma once
// The column a table's labels are likely in, by its name, for the fix when data.labels is not set
// (a CSV's header, a query's columns): gputrain names it but never guesses it for a run.

#include <string>
#include <vector>

#include "gputrain/core/units.hpp"

namespace gputrain::data {

/// The first of `columns` named like a label (label, target, y, class, in any case), or "".
inline std::string column_named_like_a_label(const std::vector<std::string>& columns) {
  for (const auto& column : columns)
    for (const char* usual : {"label", "labels", "target", "targets", "y", "class"})
      if (core::lower(column) == usual) return column;
  return "";
}

}  // namespace gputrain::data

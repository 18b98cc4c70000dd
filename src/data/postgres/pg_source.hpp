#pragma once
// data.source postgres: the rows of data.query (and data.val_query) read over binary COPY.

#include "gputrain/data/sources.hpp"

namespace gputrain::data::postgres {

/// Opens the source: training and validation rows from one REPEATABLE READ snapshot, decoded as
/// they stream in. Throws UsageError or EnvironmentError naming the key, column or server and the fix.
Sources open_postgres(const SourceSpec& spec);

}  // namespace gputrain::data::postgres

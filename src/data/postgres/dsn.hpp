#pragma once
// A PostgreSQL connection string as gputrain shows it (config.yaml, logs, errors): its password
// masked. Kept apart from libpq, so the config can show data.dsn in every build.

#include <string>

namespace gputrain::data::postgres {

/// `dsn` with any password replaced by ****: in URIs (user:secret@host, ?password=) and in
/// key=value strings (password=secret, password='se cret').
std::string mask_password(const std::string& dsn);

}  // namespace gputrain::data::postgres

#pragma once
// Files that are either the old version or the new one, never half-written: write a temporary
// file beside the target, fsync it, rename it over the target, fsync the folder.

#include <functional>
#include <string>
#include <string_view>

namespace gputrain::core {

/// Writes `bytes` to `path` atomically; creates missing parent folders. Throws Error (naming the
/// path and the system's reason) on failure, leaving any previous file at `path` untouched.
void write_file_atomically(const std::string& path, std::string_view bytes);

/// As above, but `write` produces the content through `append` (which may be called many times).
/// If `write` throws, the partial temporary file is removed and the exception propagates.
void write_file_atomically(const std::string& path, const std::function<void(const std::function<void(std::string_view)>& append)>& write);

/// A file the user named on the command line (--junit, --plot): written as above, except that a
/// path that exists and is no regular file (/dev/stdout, a pipe) is written straight through, not
/// replaced. Throws Error naming the path, the system's reason and its fix.
void write_named_file(const std::string& path, std::string_view bytes);

}  // namespace gputrain::core

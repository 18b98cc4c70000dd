#pragma once
// Errors for writes the system refused, with a fix for the reason it gave: a full disk says how much
// is free, a quota, the file-size limit, a read-only or unwritable folder each say what to change.

#include <optional>
#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::core {

/// The file (regular, a device, a pipe) that stands where `folder` or a folder above it would go
/// ("Not a directory"), if any.
std::optional<std::string> file_in_the_way(const std::string& folder);

/// When a name in `path` is longer than its file system takes (255 bytes on most) or the whole
/// path longer than PATH_MAX: which name, its length and the limit ("File name too long" names
/// neither); nullopt otherwise.
std::optional<std::string> overlong_path(const std::string& path);

/// Makes `folder` and those above it, for output that `key` (a config key or an option) points at,
/// before any work is done: one that cannot be made is a UsageError (exit 2) naming the key, the
/// file in the way or the system's reason, and the fix. `for_a_file`: the key names a file in it.
void make_output_folder(const std::string& folder, const std::string& key, bool for_a_file = false);

/// What make_output_folder() refuses, found without making anything (for output written later, or
/// never: a trace window the run does not reach): a file in the way, or a nearest existing folder
/// this user cannot write in.
void refuse_unmakeable_folder(const std::string& folder, const std::string& key, bool for_a_file = false);

/// For an output file `path` (an option such as --junit): refuse_unmakeable_folder() and
/// make_output_folder() on the folder that will hold it, when it is not the current one.
void refuse_unwritable_file(const std::string& path, const std::string& key);
void make_folders_for_file(const std::string& path, const std::string& key);

/// The fix for an open refused by a limit on open files, of the process (EMFILE: `ulimit -n`) or
/// of the system (ENFILE), for which no file or folder is at fault; nothing for any other errno.
std::optional<std::string> open_files_limit_remedy(int error_number);

/// What to do about `error_number` (an errno from writing `path`), in the user's terms.
std::string write_error_remedy(int error_number, const std::string& path);

/// "cannot <what> '<path>': <strerror>", with write_error_remedy() as its fix (exit 1).
Error write_error(const std::string& what, const std::string& path, int error_number);

}  // namespace gputrain::core

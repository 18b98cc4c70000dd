#pragma once
// A clone made without git-lfs leaves, in place of each large file, a pointer of three lines:
// "version https://git-lfs.github.com/spec/v1", "oid sha256:...", "size 48213". Read as the file,
// it is a malformed array, CSV, checkpoint or image; the readers name it for what it is instead.

#include <optional>
#include <string>
#include <string_view>

namespace gputrain::data {

/// "a Git LFS pointer (130 bytes) standing in for a 47.08 KiB file" when `head` (a file's first
/// bytes) is a pointer; nothing otherwise.
std::optional<std::string> lfs_pointer_text(std::string_view head);

/// Throws UsageError naming `path` as a Git LFS pointer, with `git lfs pull` as the fix, when
/// `head` is one.
void refuse_lfs_pointer(std::string_view head, const std::string& path);

/// The same for the file at `path`, whose first bytes are read when it is small enough to be a
/// pointer (under 1 KiB); a file that cannot be read is left to the reader to name.
void refuse_lfs_pointer_file(const std::string& path);

}  // namespace gputrain::data

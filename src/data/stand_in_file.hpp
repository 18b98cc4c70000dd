#pragma once
// Files that stand in for the one a run needs. A clone made without git-lfs leaves a pointer of
// three lines ("version https://git-lfs.github.com/spec/v1", "oid sha256:...", "size 48213"); a
// download can save the web page it got (a "blob" link, a sign-in, a 404) under the file's name.
// Read as the file, either is a malformed array, CSV, checkpoint or image; the readers name it for
// what it is instead.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gputrain::data {

/// The bytes of a file's start that tell: a pointer is shorter, a page's start and title are in them.
constexpr std::size_t kStandInHeadBytes = 1024;

struct StandIn {
  std::string what;  // "a Git LFS pointer (130 bytes) standing in for a 47.08 KiB file", "a web page ('404 Not Found')"
  std::string why;   // how such a file comes about
  std::string fix;   // how to get the file itself
};

/// What `head` (a file's first kStandInHeadBytes, or all of it) is when it stands in for a file.
std::optional<StandIn> stand_in(std::string_view head);

/// Throws UsageError naming `path` and what it is, with the fix, when `head` stands in for a file.
void refuse_stand_in(std::string_view head, const std::string& path);

/// The same for the file at `path`, whose start is read; a file that cannot be read is left to
/// the reader to name.
void refuse_stand_in_file(const std::string& path);

}  // namespace gputrain::data

#include "stand_in_file.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "core/web_page.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

bool starts_with(std::string_view text, std::string_view start) { return text.substr(0, start.size()) == start; }

// Git LFS writes pointers under 1024 bytes; git-lfs before 1.0 used the hawser address.
std::optional<StandIn> lfs_pointer(std::string_view head) {
  if (head.size() >= kStandInHeadBytes ||
      !(starts_with(head, "version https://git-lfs.github.com/spec/") || starts_with(head, "version https://hawser.github.com/spec/")))
    return std::nullopt;
  std::optional<std::uint64_t> size;  // the "size N" line: the bytes of the file it stands for
  if (const auto at = head.find("\nsize "); at != std::string_view::npos) {
    std::uint64_t n = 0;
    std::size_t digits = 0;
    for (auto i = at + 6; i < head.size() && head[i] >= '0' && head[i] <= '9' && digits < 19; ++i, ++digits)
      n = n * 10 + std::uint64_t(head[i] - '0');
    if (digits > 0) size = n;
  }
  return StandIn{"a Git LFS pointer (" + core::counted(static_cast<std::int64_t>(head.size()), "byte") + ") standing in for " +
                     (size ? "a " + core::format_bytes(*size) + " file" : std::string("the file")),
                 "the repository was cloned or pulled without git-lfs",
                 "fetch the files where the repository is: git lfs install && git lfs pull (apt install git-lfs first, if `git lfs` "
                 "is not a git command there)"};
}

// A page starts so (after a byte-order mark or blank lines); data that merely holds markup does not.
std::optional<StandIn> web_page(std::string_view head) {
  if (starts_with(head, "\xEF\xBB\xBF")) head.remove_prefix(3);
  const auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return std::nullopt;
  const auto opening = core::lower(std::string(head.substr(start, 14)));
  if (!starts_with(opening, "<!doctype html") && !starts_with(opening, "<html")) return std::nullopt;
  const auto gist = core::page_gist(head);
  return StandIn{"a web page" + (gist.empty() ? std::string() : " ('" + gist + "')"),
                 "a download saved the page it was answered with (a sign-in or error page, or the page around the file) under "
                 "the file's name",
                 "download the file itself: GitHub's Raw link, Hugging Face's link with /resolve/ in place of /blob/, a file "
                 "behind a sign-in from the browser"};
}

}  // namespace

std::optional<StandIn> stand_in(std::string_view head) {
  if (auto pointer = lfs_pointer(head)) return pointer;
  return web_page(head);
}

void refuse_stand_in(std::string_view head, const std::string& path) {
  if (const auto found = stand_in(head))
    throw UsageError("'" + path + "' is " + found->what + ", not the file itself: " + found->why, found->fix);
}

void refuse_stand_in_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return;
  std::ifstream in(path, std::ios::binary);
  std::string head(std::min<std::size_t>(static_cast<std::size_t>(info.st_size), kStandInHeadBytes), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  refuse_stand_in(head, path);
}

}  // namespace gputrain::data

#include "lfs_pointer.hpp"

#include <sys/stat.h>

#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

// Git LFS writes pointers under 1024 bytes, and git-lfs before 1.0 used the hawser address.
constexpr std::size_t kMostPointerBytes = 1024;

bool starts_as_pointer(std::string_view head) {
  for (const std::string_view version : {"version https://git-lfs.github.com/spec/", "version https://hawser.github.com/spec/"})
    if (head.substr(0, version.size()) == version) return true;
  return false;
}

// The "size N" line: the bytes of the file the pointer stands in for.
std::optional<std::uint64_t> pointed_size(std::string_view head) {
  const auto at = head.find("\nsize ");
  if (at == std::string_view::npos) return std::nullopt;
  std::uint64_t size = 0;
  std::size_t i = at + 6, digits = 0;
  for (; i < head.size() && head[i] >= '0' && head[i] <= '9' && digits < 19; ++i, ++digits) size = size * 10 + std::uint64_t(head[i] - '0');
  if (digits == 0) return std::nullopt;
  return size;
}

}  // namespace

std::optional<std::string> lfs_pointer_text(std::string_view head) {
  if (head.size() >= kMostPointerBytes || !starts_as_pointer(head)) return std::nullopt;
  const auto size = pointed_size(head);
  return "a Git LFS pointer (" + core::counted(static_cast<std::int64_t>(head.size()), "byte") + ") standing in for " +
         (size ? "a " + core::format_bytes(*size) + " file" : std::string("the file"));
}

void refuse_lfs_pointer(std::string_view head, const std::string& path) {
  if (const auto text = lfs_pointer_text(head))
    throw UsageError("'" + path + "' is " + *text + ", not the file itself: the repository was cloned or pulled without git-lfs",
                     "fetch the files where the repository is: git lfs install && git lfs pull (apt install git-lfs first, "
                     "if `git lfs` is not a git command there)");
}

void refuse_lfs_pointer_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || static_cast<std::size_t>(info.st_size) >= kMostPointerBytes) return;
  std::ifstream in(path, std::ios::binary);
  std::string head(static_cast<std::size_t>(info.st_size), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  refuse_lfs_pointer(head, path);
}

}  // namespace gputrain::data

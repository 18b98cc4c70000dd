#include "gputrain/core/write_error.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/resource_limit.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::core {
namespace {

// The folder the file goes in: what the user can free, fix or point elsewhere.
std::string folder_of(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The nearest folder of `folder`'s path that exists (itself, or one above): a folder not made yet
// is on its parent's disk and under its parent's permissions. Empty when the path cannot be read.
std::filesystem::path nearest_existing(const std::string& folder) {
  std::error_code ec;
  auto existing = std::filesystem::absolute(folder, ec);
  while (!ec && !std::filesystem::exists(existing, ec) && existing.has_relative_path()) existing = existing.parent_path();
  return ec ? std::filesystem::path() : existing;
}

std::string free_space(const std::string& folder) {
  const auto existing = nearest_existing(folder);
  struct statvfs disk {};
  if (existing.empty() || ::statvfs(existing.c_str(), &disk) != 0) return "its free space is unknown";
  const std::string free = format_bytes(static_cast<std::uint64_t>(disk.f_bavail) * disk.f_frsize) + " free now";
  // Bytes to spare but no inode: many small files (a dataset of images, old runs) used them up.
  if (disk.f_files > 0 && disk.f_favail == 0) return free + ", but no room for one more file: its inodes are used up, `df -i`";
  return free;
}

// The fix's "point KEY at ...": another folder, or a file in one.
std::string elsewhere(bool for_a_file) { return for_a_file ? "a file in another folder" : "another folder"; }

// The folder that will hold the file `path`; empty for a file in the current folder.
std::string parent_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

std::string file_size_limit() {
  const auto limit = soft_limit(RLIMIT_FSIZE);
  return limit ? " (now " + format_bytes(*limit) + ")" : "";
}

// "owned by root, mode 755": why this user may not write there.
std::string owner_and_mode(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "its owner unknown";
  const passwd* owner = ::getpwuid(info.st_uid);
  char mode[8];
  std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(info.st_mode & 0777));
  return "owned by " + (owner ? std::string(owner->pw_name) : "user " + std::to_string(info.st_uid)) + ", mode " + mode;
}

// Write access for this user: its own folder by chmod; another's (a container run as root made
// it) by its owner or sudo.
std::string access_fix(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && info.st_uid == ::geteuid())
    return "let its owner write in it (`chmod u+w '" + path.string() + "'`)";
  return "have it made this user's (`sudo chown -R \"$(id -un)\" '" + path.string() + "'`)";
}

}  // namespace

// eCryptfs takes 143 bytes a name; sweep tools that name a run by its settings reach 255.
std::optional<std::string> overlong_path(const std::string& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  if (ec) return std::nullopt;
  std::filesystem::path walked = absolute.root_path();
  long name_max = ::pathconf(walked.c_str(), _PC_NAME_MAX);
  for (const auto& part : absolute.relative_path()) {
    const auto& name = part.native();
    const std::size_t limit = name_max > 0 ? static_cast<std::size_t>(name_max) : 255;
    if (name.size() > limit) {
      std::size_t cut = 24;  // a beginning to recognise it by, cut between UTF-8 characters
      while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
      return "the name '" + name.substr(0, cut) + "...' in it is " + std::to_string(name.size()) + " bytes long, over the " +
             std::to_string(limit) + " its file system takes";
    }
    walked /= part;
    if (std::filesystem::is_directory(walked, ec)) name_max = ::pathconf(walked.c_str(), _PC_NAME_MAX);
  }
  if (absolute.native().size() >= PATH_MAX)
    return "it is " + std::to_string(absolute.native().size()) + " bytes long from /, over the system's " + std::to_string(PATH_MAX) +
           " (PATH_MAX)";
  return std::nullopt;
}

std::optional<std::string> file_in_the_way(const std::string& folder) {
  for (auto part = std::filesystem::path(folder); !part.empty() && part != part.parent_path(); part = part.parent_path())
    // Any kind but a folder: a regular file, or a device such as /dev/null.
    if (std::error_code ec; std::filesystem::exists(part, ec) && !std::filesystem::is_directory(part, ec)) return part.string();
  return std::nullopt;
}

void refuse_unmakeable_folder(const std::string& folder, const std::string& key, bool for_a_file) {
  if (const auto too_long = overlong_path(folder))
    throw UsageError(key + ": '" + folder + "' cannot be created: " + *too_long,
                     "give " + key + " a shorter path (a run named by its settings has them in its config.yaml)");
  // A file where the folder (or one above it) would go: name it, as "Not a directory" does not.
  if (const auto file = file_in_the_way(folder)) {
    // A device (`logging.dir: /dev/null`, to write nothing) is no file to move away.
    if (std::error_code ec; !std::filesystem::is_regular_file(*file, ec))
      throw UsageError(key + ": '" + folder + "' cannot be created: '" + *file + "' is a device, not a folder",
                       "point " + key + " at " + elsewhere(for_a_file) + " (missing folders are created)" +
                           (for_a_file ? std::string() : "; for a run whose files are thrown away, --set " + key + "=$(mktemp -d)"));
    throw UsageError(
        key + ": '" + folder + "' cannot be created: '" + *file + "' is a file",
        "point " + key + " at " + elsewhere(for_a_file) + " (missing folders are created), or move the file '" + *file + "' away");
  }
  const auto existing = nearest_existing(folder);
  if (existing.empty() || ::access(existing.c_str(), W_OK | X_OK) == 0) return;
  const int error = errno;
  std::error_code ec;
  const std::string prefix = key + ": " + (std::filesystem::is_directory(folder, ec) ? "" : "'" + folder + "' cannot be created: ");
  if (error == EROFS)  // a volume mounted read-only (docker -v /data:/data:ro): no permission would help
    throw UsageError(
        prefix + "'" + existing.string() + "' is on a read-only filesystem",
        "point " + key + " at " + elsewhere(for_a_file) + " on a filesystem this user can write (missing folders are created)");
  throw UsageError(
      prefix + "this user may not write in '" + existing.string() + "' (" + owner_and_mode(existing) + ")",
      "point " + key + " at " + elsewhere(for_a_file) + " this user can write (missing folders are created), or " + access_fix(existing));
}

void make_output_folder(const std::string& folder, const std::string& key, bool for_a_file) {
  refuse_unmakeable_folder(folder, key, for_a_file);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (!ec) return;
  const int error = ec.value();  // a full disk or quota has its own fix; a refusal, another folder
  const bool of_the_disk = error == ENOSPC || error == EDQUOT || error == EIO || error == EMFILE || error == ENFILE;
  throw UsageError(key + ": '" + folder + "' cannot be created: " + ec.message(),
                   of_the_disk ? write_error_remedy(error, folder)
                               : "point " + key + " at " + elsewhere(for_a_file) + " this user can write (missing folders are created)");
}

void refuse_unwritable_file(const std::string& path, const std::string& key) {
  if (const auto too_long = overlong_path(path))
    throw UsageError(key + ": '" + path + "' cannot be written: " + *too_long, "give " + key + " a shorter path");
  if (const auto folder = parent_of(path); !folder.empty()) refuse_unmakeable_folder(folder, key, /*for_a_file=*/true);
}

void make_folders_for_file(const std::string& path, const std::string& key) {
  if (const auto folder = parent_of(path); !folder.empty()) make_output_folder(folder, key, /*for_a_file=*/true);
}

std::optional<std::string> open_files_limit_remedy(int error_number) {
  if (error_number == ENFILE)
    return std::string(
        "the system has as many files open as it allows: close other programs, or raise its limit "
        "(`sysctl fs.file-max`)");
  if (error_number != EMFILE) return std::nullopt;
  const auto limit = soft_limit(RLIMIT_NOFILE);
  const std::string now = limit ? " (" + std::to_string(*limit) + " now)" : "";
  return "this process has as many files open as it may, the shell's `ulimit -n`" + now +
         ": raise it before starting gputrain (`ulimit -n 65536`; a container: `docker run --ulimit nofile=65536`)";
}

std::string write_error_remedy(int error_number, const std::string& path) {
  if (auto limit = open_files_limit_remedy(error_number)) return *limit;
  const auto folder = folder_of(path);
  switch (error_number) {
    case ENOSPC:
      return "the disk of '" + folder + "' is full (" + free_space(folder) + "): free space there, or write to another disk";
    case EDQUOT:
      return "your disk quota for '" + folder + "' is used up (`quota -s` shows it): free space within it, or write to another disk";
    case EFBIG:
      return "the file would outgrow the largest file this process may write" + file_size_limit() +
             ", the shell's `ulimit -f`: raise it (`ulimit -f unlimited`) before starting gputrain";
    case EROFS:
      return "'" + folder + "' is on a read-only filesystem: write to a folder on another one";
    case EACCES:
    case EPERM:
      return "this user may not write in '" + folder + "': change its permissions (`ls -ld " + folder + "`), or write elsewhere";
    case ENOTDIR:
      if (const auto file = file_in_the_way(folder))
        return "'" + *file + "' is a file, where a folder would go: write elsewhere, or move that file away";
      [[fallthrough]];
    case ENOENT:
      return "the folder '" + folder + "' does not exist and could not be made: check the path";
    case EBADF:  // standard output given for reading (`1< file`, `1</dev/null`)
      return "'" + path + "' was opened for reading, not writing: send the output with > (> out.txt, or > /dev/null to drop it)";
    case ENAMETOOLONG:
      return "a name in '" + path + "' is longer than its file system takes (255 bytes on most), or the whole path longer than " +
             "the system's " + std::to_string(PATH_MAX) + ": write to a shorter path";
    case EIO:
      return "the disk reported an input/output error: check it (`dmesg` names the device), and write to another disk meanwhile";
    default:
      return "check that the folder '" + folder + "' exists, is writable and its disk is not full";
  }
}

Error write_error(const std::string& what, const std::string& path, int error_number) {
  return Error("cannot " + what + " '" + path + "': " + std::strerror(error_number), write_error_remedy(error_number, path));
}

}  // namespace gputrain::core

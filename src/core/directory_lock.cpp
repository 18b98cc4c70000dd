#include "gputrain/core/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::core {

namespace {

constexpr const char* kLockName = ".gputrain.lock";

// This machine's name, beside the pid in the lock file: a run folder on a shared file system
// (NFS) may be locked from another node, where the pid names no process of this one.
std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

// The holder writes "PID@HOST" into the lock file, so the one refused can say who holds it.
std::string holder_of(int fd) {
  char text[300] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  const std::string written = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "";
  const auto at = written.find('@');
  const std::string pid = written.substr(0, at), host = at == std::string::npos ? "" : written.substr(at + 1);
  if (pid.empty()) return "another gputrain run";
  return "another gputrain run (pid " + pid + (host.empty() || host == host_name() ? "" : " on " + host) + ")";
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& folder, const std::string& key) : folder_(folder), key_(key) {
  struct stat info {};
  if (::stat(folder.c_str(), &info) == 0) {
    device_ = info.st_dev;
    inode_ = info.st_ino;
  }
  take((std::filesystem::path(folder) / kLockName).string());
}

bool DirectoryLock::used_by_a_run(const std::string& folder) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(folder) / kLockName, ec);
}

void DirectoryLock::take(const std::string& path) {
  // O_CLOEXEC: a child process (a launched rank, a PNG renderer) must not inherit the lock.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw UsageError(key_ + ": cannot create '" + path + "': " + std::strerror(errno), "set " + key_ + " to a folder this user can write");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    // A file system without locks (Lustre without -o flock, FUSE mounts such as gcsfuse): a run
    // there beats no run at all; the caller warns that a second one would not be refused.
    if (error == ENOSYS || error == EOPNOTSUPP || error == ENOLCK || error == EINVAL) {
      unlocked_ = std::strerror(error);
      return;
    }
    if (error != EWOULDBLOCK)
      throw Error("cannot lock '" + path + "': " + std::strerror(error), "check the file system of " + key_ + " supports file locks");
    throw UsageError(holder + " is writing to '" + folder_ + "' (" + key_ + ")",
                     "wait for that run to finish, or give this one its own folder: --set " + key_ + "=<another folder>");
  }
  const std::string holder = std::to_string(::getpid()) + "@" + host_name();
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, holder.data(), holder.size(), 0);
    (void)written;  // it only improves another run's message; the lock is held either way
  }
}

void DirectoryLock::check_still_held() {
  struct stat folder {};
  const bool gone = ::stat(folder_.c_str(), &folder) != 0;
  if (gone || folder.st_dev != device_ || folder.st_ino != inode_)
    throw Error("'" + folder_ + "' (" + key_ + ") " + (gone ? "was deleted or moved away" : "was replaced by another folder of that name") +
                    " while this run trained: nothing more is written there, where another run may be writing now",
                "keep a run's folder until the run ends; to train again, start the run anew (checkpoint.resume: PATH goes on "
                "from a checkpoint kept elsewhere)");
  if (!unlocked_.empty()) return;  // no lock to hold on this file system
  const std::string path = (std::filesystem::path(folder_) / kLockName).string();
  struct stat held {};
  struct stat named {};
  if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino && held.st_dev == named.st_dev) return;
  ::close(fd_);  // its file was removed: another run could lock a new one
  fd_ = -1;
  take(path);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace gputrain::core

#include "gputrain/core/directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "gputrain/core/error.hpp"

namespace gputrain::core {

namespace {

// The holder writes its pid into the lock file, so the one refused can say who holds it.
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  const std::string pid = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "";
  return pid.empty() ? "another gputrain run" : "another gputrain run (pid " + pid + ")";
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& folder, const std::string& key) {
  const std::string path = (std::filesystem::path(folder) / ".gputrain.lock").string();
  // O_CLOEXEC: a child process (a launched rank, a PNG renderer) must not inherit the lock.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw UsageError(key + ": cannot create '" + path + "': " + std::strerror(errno), "set " + key + " to a folder this user can write");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK)
      throw Error("cannot lock '" + path + "': " + std::strerror(error), "check the file system of " + key + " supports file locks");
    throw UsageError(holder + " is writing to '" + folder + "' (" + key + ")",
                     "wait for that run to finish, or give this one its own folder: --set " + key + "=<another folder>");
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, pid.data(), pid.size(), 0);
    (void)written;  // the pid only improves another run's message; the lock is held either way
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace gputrain::core

#include "gputrain/core/record_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "gputrain/core/write_error.hpp"

namespace gputrain::core {

RecordFile::RecordFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw write_error("open", path_, errno);
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    throw write_error("open", path_, error);
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
}

RecordFile::RecordFile(RecordFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_), ragged_(other.ragged_) {}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool RecordFile::cut_back() {
  // Shrinking needs no free blocks: it works on a full disk.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) return false;
  ragged_ = false;
  return true;
}

std::optional<int> RecordFile::append(std::string_view bytes) {
  if (ragged_ && !cut_back()) return errno;  // never write after half a record
  std::uint64_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ragged_ = written > 0;
      if (ragged_) cut_back();
      return error;
    }
    written += static_cast<std::uint64_t>(n);
  }
  size_ += written;
  return std::nullopt;
}

}  // namespace gputrain::core

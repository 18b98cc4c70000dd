#include "gputrain/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "gputrain/core/write_error.hpp"

namespace gputrain::core {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int error) { throw write_error(what, path, error); }

// All of `bytes` to `fd`, through short writes and interruptions; throws naming `path` otherwise.
void write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", path, errno);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Closes the descriptor and removes the partial file unless committed.
struct PartialFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~PartialFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(path.c_str());
  }
};

void sync_folder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // some filesystems do not allow it; the rename is still atomic
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const std::function<void(std::string_view)>&)>& write) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  PartialFile partial{path + ".partial"};
  partial.fd = ::open(partial.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (partial.fd < 0) fail("create", partial.path, errno);
  write([&](std::string_view bytes) { write_all(partial.fd, bytes, partial.path); });
  if (::fsync(partial.fd) != 0) fail("flush", partial.path, errno);
  if (::close(partial.fd) != 0) {
    partial.fd = -1;
    fail("close", partial.path, errno);
  }
  partial.fd = -1;
  if (::rename(partial.path.c_str(), path.c_str()) != 0) fail("replace", path, errno);
  partial.committed = true;
  sync_folder(target.parent_path());
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_file_atomically(path, [&](const std::function<void(std::string_view)>& append) { append(bytes); });
}

void write_named_file(const std::string& path, std::string_view bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) {
    write_file_atomically(path, bytes);
    return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("open", path, errno);
  try {
    write_all(fd, bytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace gputrain::core

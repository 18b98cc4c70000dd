#include "mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gputrain/core/error.hpp"
#include "mapping_watch.hpp"
#include "path_text.hpp"
#include "stand_in_file.hpp"

namespace gputrain::data {

namespace {

// A data file is mapped by its size, which a stream has not: a shell's <(zcat x.csv.gz) is a
// pipe that would read as empty, and a named pipe with no writer blocks open(2) for good.
void refuse_stream(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) return;  // open() says the rest
  const char* kind = S_ISFIFO(info.st_mode)   ? "a pipe (a named pipe, or a shell's <(...))"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                                              : "a device";
  throw UsageError("'" + path + "' is " + kind + ", not a file: gputrain maps what it reads by the file's size",
                   "write it to a file first and point at that (a gzip'd CSV needs no pipe: data.path: x.csv.gz reads it)");
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  refuse_stream(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw UsageError(unusable_path_text(path, "cannot open '" + path + "': " + std::strerror(errno)),
                     "check data.path and the file's permissions");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || S_ISDIR(info.st_mode)) {
    ::close(fd);
    throw UsageError("'" + path + "' is not a regular file", "point data.path at the file itself");
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<std::size_t>(info.st_size);
  if (file->size_ > 0) {
    void* address = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw UsageError("cannot map '" + path + "' into memory: " + std::strerror(error), "check that the file is readable");
    }
    file->data_ = static_cast<const unsigned char*>(address);
    file->watch_ = watch_mapping(address, file->size_, path, info);
  }
  ::close(fd);  // the mapping keeps the file alive
  refuse_stand_in(std::string_view(reinterpret_cast<const char*>(file->data_), std::min(file->size_, kStandInHeadBytes)), path);
  return file;
}

MappedFile::~MappedFile() {
  unwatch_mapping(watch_);
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace gputrain::data

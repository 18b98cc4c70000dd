#pragma once
// A read-only memory map of a whole file, shared by the tensors that view it: dataset files are
// paged in as the loader touches them instead of being read up front. A file cut short under a
// mapping ends the run with an error that names it, not "Bus error"; one rewritten in place is
// named too (mapping_watch.hpp).

#include <cstddef>
#include <memory>
#include <string>

namespace gputrain::data {

class MappedFile {
 public:
  /// Maps `path`; throws UsageError naming the path when it cannot be opened.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  int watch_ = -1;  ///< its registration with mapping_watch.hpp
};

}  // namespace gputrain::data

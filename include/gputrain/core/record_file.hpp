#pragma once
// A file that grows by whole records (log lines, JSON lines, TFRecords). A record the disk refuses
// (full, over quota, past the file-size limit) is cut back off, so the file never holds half a
// record with later ones after it: readers such as pandas' read_json(lines=True) or TensorBoard
// would refuse everything from there on.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gputrain::core {

class RecordFile {
 public:
  /// Opens `path` for appending, creating it. Throws Error (with write_error's fix) when it cannot.
  explicit RecordFile(std::string path);
  ~RecordFile();
  RecordFile(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  RecordFile& operator=(RecordFile&&) = delete;

  /// Appends `bytes` whole. When the system refuses them, the file is left as it was before the
  /// call and the system's reason (an errno: write_error_remedy() explains it) is returned; a later
  /// append may succeed.
  std::optional<int> append(std::string_view bytes);

  /// The file's path, as given.
  const std::string& path() const { return path_; }
  /// Bytes in the file: whole records only.
  std::uint64_t size() const { return size_; }

 private:
  // Cuts the file back to its whole records; false when even that fails.
  bool cut_back();
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  bool ragged_ = false;  // a refused record's bytes may still be at the end
};

}  // namespace gputrain::core

#pragma once
// The text of a file that should hold text (a CSV): mapped as it is, or inflated when gzip'd, less
// a UTF-8 byte-order mark, with classic Mac OS line breaks ('\r' alone) read as '\n', and text that
// is not UTF-8 read as Windows-1252 (Excel's "CSV" export on Windows writes it). A file that
// is something else (another compression, a zip or .xlsx, a Parquet file, UTF-16, binary) is
// refused with what it is and how to make the text of it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace gputrain::data {

class MappedFile;

class TextFile {
 public:
  /// How far opening is (inflating a .gz): compressed bytes read, of all of them.
  using Progress = std::function<void(std::uint64_t read, std::uint64_t total)>;

  /// Opens `path`; throws UsageError naming it when it cannot be read or is not text.
  static TextFile open(const std::string& path, const Progress& progress = {});

  /// The text, from after the byte-order mark, if any.
  std::string_view text() const;
  /// Whether the file was gzip'd.
  bool inflated() const { return gzipped_; }
  /// Empty when the file is UTF-8; else where its first other byte is ("line 1: byte 0xE9, read
  /// as 'é'"), the text having been read as Windows-1252.
  const std::string& not_utf8() const { return not_utf8_; }

 private:
  std::shared_ptr<const MappedFile> mapped_;  // the file as it is; null once the text is owned_
  std::string owned_;                         // the text inflated, or with '\r' line breaks made '\n'
  bool gzipped_ = false;
  std::size_t bom_ = 0;  // bytes of byte-order mark before the text
  std::string not_utf8_;
};

}  // namespace gputrain::data

#include "text_file.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gzip_data.hpp"
#include "mapped_file.hpp"
#include "path_text.hpp"

namespace gputrain::data {
namespace {

// What a file that is not text most likely is, by its first bytes, and how to get text from it.
struct NotText {
  std::string_view magic;
  const char* what;
  const char* fix;  // "%s" is the path; for a table pandas reads, its read call (pandas_to_csv_fix)
  bool pandas = false;
};

constexpr const char* kUtf16 = "UTF-16 text (as a spreadsheet's \"Unicode text\" export writes), not UTF-8";
constexpr const char* kUtf16Fix = "export it as \"CSV UTF-8\" (or convert it: iconv -f UTF-16 -t UTF-8 %s > data.csv)";

const std::vector<NotText>& not_text_kinds() {
  static const std::vector<NotText> kinds{
      {"BZh", "bzip2-compressed", "decompress it first: bunzip2 -k %s"},
      {std::string_view("\xFD"
                        "7zXZ\0",
                        6),
       "xz-compressed", "decompress it first: xz -dk %s"},
      {"\x28\xB5\x2F\xFD", "zstd-compressed", "decompress it first: zstd -d %s"},
      {"PK\x03\x04", "a zip archive (an Excel .xlsx workbook is one too)", "unzip it, or save the sheet as \"CSV UTF-8\""},
      {"PAR1", "a Parquet file", "read_parquet('%s')", true},
      {"ARROW1", "an Arrow/Feather file", "read_feather('%s')", true},
      {"\xFF\xFE", kUtf16, kUtf16Fix},  // little-endian
      {"\xFE\xFF", kUtf16, kUtf16Fix},  // big-endian
  };
  return kinds;
}

// JSON under a CSV name (an API's answer saved as data.csv, df.to_json): read as CSV, its header
// row would be the first object, or the whole file. What it is, and read_json's extra argument.
std::optional<std::pair<std::string, std::string>> json_kind(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto open = text.find_first_not_of(kSpace);
  const auto inner = open == std::string_view::npos ? open : text.find_first_not_of(kSpace, open + 1);
  if (inner == std::string_view::npos) return {};
  const bool object = text[open] == '{' && text[inner] == '"';
  const bool array = text[open] == '[' && (text[inner] == '{' || text[inner] == '[' || text[inner] == '"');
  if (!object && !array) return {};
  // One object per line, more lines after the first: JSON lines (pandas' lines=True).
  const auto line_end = text.find('\n', open);
  const auto first_line = text.substr(open, line_end == std::string_view::npos ? std::string_view::npos : line_end - open);
  const auto last = first_line.find_last_not_of(kSpace);
  const bool more = line_end != std::string_view::npos && text.find_first_not_of(kSpace, line_end) != std::string_view::npos;
  if (object && more && first_line[last] == '}')
    return std::pair{std::string("JSON lines (one object per line)"), std::string(", lines=True")};
  return std::pair{std::string(object ? "JSON (an object)" : "JSON (an array)"), std::string()};
}

std::string with_path(const char* fix, const std::string& path) {
  std::string out = fix;
  const auto at = out.find("%s");
  if (at != std::string::npos) out.replace(at, 2, path);
  return out;
}

void refuse_if_not_text(std::string_view text, const std::string& path, bool inflated) {
  const std::string what = inflated ? "'" + path + "' holds " : "'" + path + "' is ";
  for (const auto& kind : not_text_kinds())
    if (text.substr(0, kind.magic.size()) == kind.magic)
      throw UsageError(what + kind.what, kind.pandas ? pandas_to_csv_fix(with_path(kind.fix, path), path) : with_path(kind.fix, path));
  if (const auto json = json_kind(text))
    throw UsageError(what + json->first + ", not CSV", pandas_to_csv_fix("read_json('" + path + "'" + json->second + ")", path));
  // A zero byte in the first line: no text format has one there.
  const auto first_line = text.substr(0, text.find('\n'));
  if (first_line.find('\0') != std::string_view::npos)
    throw UsageError(what + "binary data, not text: its first line has a zero byte", "give the CSV file itself (UTF-8 text, plain or .gz)");
}

// Where text that is not UTF-8 first shows: its line, the byte, and what Windows-1252 reads it as.
std::string where_not_utf8(std::string_view text, std::size_t at) {
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  static const char* digits = "0123456789ABCDEF";
  const auto byte = static_cast<unsigned char>(text[at]);
  return "line " + std::to_string(line) + ": byte 0x" + digits[byte >> 4] + digits[byte & 15] + ", read as '" +
         core::windows1252_to_utf8(text.substr(at, 1)) + "'";
}

}  // namespace

TextFile TextFile::open(const std::string& path, const Progress& progress) {
  TextFile file;
  file.mapped_ = MappedFile::open(path);
  if (is_gzip(file.mapped_->data(), file.mapped_->size())) {
    file.owned_ = inflate_gzip(file.mapped_->data(), file.mapped_->size(), path, progress);
    file.mapped_.reset();
    file.gzipped_ = true;
  }
  // Spreadsheets mark their "CSV UTF-8" exports with a byte-order mark, which is not part of the
  // first column's name.
  if (file.text().substr(0, 3) == "\xEF\xBB\xBF") file.bom_ = 3;
  refuse_if_not_text(file.text(), path, file.inflated());
  // Lines that end in '\r' alone (classic Mac OS, as Excel for Mac's "CSV (Macintosh)" writes)
  // become '\n' lines, as pandas reads them; the first line break tells.
  const auto text = file.text();
  const auto first_break = text.find_first_of("\r\n");
  if (first_break != std::string_view::npos && text[first_break] == '\r' &&
      (first_break + 1 == text.size() || text[first_break + 1] != '\n')) {
    if (file.mapped_) file.owned_.assign(text.data() - file.bom_, text.size() + file.bom_);
    file.mapped_.reset();
    std::replace(file.owned_.begin(), file.owned_.end(), '\r', '\n');
  }
  // Names and categories reach JSON and safetensors metadata, which hold UTF-8 only.
  if (const auto at = core::first_invalid_utf8(file.text())) {
    file.not_utf8_ = where_not_utf8(file.text(), *at);
    file.owned_ = core::windows1252_to_utf8(file.text());
    file.mapped_.reset();
    file.bom_ = 0;
  }
  return file;
}

std::string_view TextFile::text() const {
  const std::string_view all = mapped_ ? std::string_view(reinterpret_cast<const char*>(mapped_->data()), mapped_->size()) : owned_;
  return all.substr(bom_);
}

}  // namespace gputrain::data

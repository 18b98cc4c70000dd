#pragma once
// Text between gputrain, UTF-8 throughout, and a PostgreSQL session in another client_encoding:
// the one data.dsn names for a database whose own is SQL_ASCII (bytes of no declared encoding,
// often a legacy Latin-1 one), or any a user set. The C library's iconv does the converting.

#include <optional>
#include <string>
#include <string_view>

namespace gputrain::data::postgres {

/// Converts text between two of PostgreSQL's encodings (LATIN1, WIN1252, SJIS, UTF8, ...). Between
/// equal ones, or where either is SQL_ASCII (bytes as they are, no encoding to convert), text
/// passes as it is. Not thread-safe: one per thread.
class TextRecoder {
 public:
  /// Throws UsageError when the C library has no converter for either encoding.
  TextRecoder(const std::string& from, const std::string& to);
  ~TextRecoder();
  TextRecoder(const TextRecoder&) = delete;
  TextRecoder& operator=(const TextRecoder&) = delete;

  bool converts() const { return handle_ != nullptr; }
  /// `text` in the target encoding; nothing when it holds a byte sequence the source encoding does
  /// not have, or a character the target has not.
  std::optional<std::string> operator()(std::string_view text) const;

 private:
  void* handle_ = nullptr;  // an iconv_t
};

/// The C library's name for one of PostgreSQL's encoding names ("WIN1252" -> "CP1252").
std::string iconv_name(const std::string& postgres_encoding);

}  // namespace gputrain::data::postgres

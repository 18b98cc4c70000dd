#include "pg_text.hpp"

#include <iconv.h>

#include <cctype>
#include <cerrno>
#include <map>

#include "gputrain/core/error.hpp"

namespace gputrain::data::postgres {
namespace {

bool passes_as_is(const std::string& from, const std::string& to) { return from == to || from == "SQL_ASCII" || to == "SQL_ASCII"; }

}  // namespace

std::string iconv_name(const std::string& postgres_encoding) {
  std::string name;
  for (const char c : postgres_encoding) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, std::string> renamed{
      {"UTF8", "UTF-8"}, {"KOI8R", "KOI8-R"}, {"KOI8U", "KOI8-U"}, {"SHIFT_JIS_2004", "SHIFT_JISX0213"}, {"EUC_JIS_2004", "EUC-JISX0213"}};
  if (const auto found = renamed.find(name); found != renamed.end()) return found->second;
  if (name.rfind("WIN", 0) == 0 && name.size() > 3 && std::isdigit(static_cast<unsigned char>(name[3]))) return "CP" + name.substr(3);
  for (auto& c : name)
    if (c == '_') c = '-';  // EUC_JP -> EUC-JP, ISO_8859_5 -> ISO-8859-5; LATIN1, SJIS, GBK as they are
  return name;
}

TextRecoder::TextRecoder(const std::string& from, const std::string& to) {
  if (passes_as_is(from, to)) return;
  const auto handle = iconv_open(iconv_name(to).c_str(), iconv_name(from).c_str());
  if (handle == reinterpret_cast<iconv_t>(-1))
    throw UsageError("the PostgreSQL session's text is in " + (from == "UTF8" ? to : from) +
                         " (client_encoding), and this system's C library cannot convert it to UTF-8",
                     "leave client_encoding out of data.dsn (gputrain then reads UTF-8, which the server converts to), or "
                     "install the C library's converters (Debian: the libc6 package's gconv modules)");
  handle_ = handle;
}

TextRecoder::~TextRecoder() {
  if (handle_) iconv_close(static_cast<iconv_t>(handle_));
}

std::optional<std::string> TextRecoder::operator()(std::string_view text) const {
  if (!handle_) return std::string(text);
  const auto cd = static_cast<iconv_t>(handle_);
  iconv(cd, nullptr, nullptr, nullptr, nullptr);  // a fresh shift state for each text
  std::string out(text.size() * 4 + 8, '\0');     // room for any encoding's text in UTF-8
  auto* in = const_cast<char*>(text.data());      // iconv's signature; it does not write there
  std::size_t in_left = text.size(), written = 0;
  for (;;) {
    char* at = out.data() + written;
    std::size_t out_left = out.size() - written;
    const auto done = iconv(cd, &in, &in_left, &at, &out_left);
    written = out.size() - out_left;
    if (done != static_cast<std::size_t>(-1)) break;
    if (errno != E2BIG) return std::nullopt;  // EILSEQ, EINVAL: a sequence the source lacks, or cut short
    out.resize(out.size() * 2);
  }
  out.resize(written);
  return out;
}

}  // namespace gputrain::data::postgres

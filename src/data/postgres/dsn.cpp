#include "dsn.hpp"

#include <algorithm>

namespace gputrain::data::postgres {
namespace {

// key=value form: password=secret or password = 'se cret'.
std::string mask_keyword_password(std::string s) {
  for (std::size_t at = s.find("password"); at != std::string::npos; at = s.find("password", at + 1)) {
    auto p = at + 8;
    while (p < s.size() && s[p] == ' ') ++p;
    if (p >= s.size() || s[p] != '=') continue;
    ++p;
    while (p < s.size() && s[p] == ' ') ++p;
    auto end = p;
    if (end < s.size() && s[end] == '\'') {
      for (++end; end < s.size() && s[end] != '\''; ++end)
        if (s[end] == '\\') ++end;
      end = std::min(end + 1, s.size());
    } else {
      while (end < s.size() && s[end] != ' ' && s[end] != '&') ++end;
    }
    s.replace(p, end - p, "****");
  }
  return s;
}

}  // namespace

std::string mask_password(const std::string& dsn) {
  auto s = dsn;
  const auto scheme = s.find("://");
  if (scheme != std::string::npos) {
    const auto start = scheme + 3;
    const auto end = std::min(s.find('/', start), s.find('?', start));
    const auto at = s.rfind('@', end == std::string::npos ? s.size() : end);
    if (at != std::string::npos && at >= start) {
      const auto colon = s.find(':', start);
      if (colon != std::string::npos && colon < at) s.replace(colon + 1, at - colon - 1, "****");
    }
  }
  return mask_keyword_password(s);
}

}  // namespace gputrain::data::postgres

#include "yaml_hints.hpp"

#include <yaml-cpp/exceptions.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

// A line "  key: rest" split by hand (user text: no std::regex, whose recursion overflows the
// stack on long lines): its indent and what follows the colon, or nothing when it is not a key.
struct KeyLine {
  std::size_t indent = 0;
  std::string_view rest;
};
std::optional<KeyLine> key_line(std::string_view line) {
  const auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  const auto is_part = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; };
  std::size_t at = line.find_first_not_of(' ');
  if (at == std::string_view::npos || !is_start(line[at])) return std::nullopt;
  const std::size_t indent = at;
  while (at < line.size() && is_part(line[at])) ++at;
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  if (at == line.size() || line[at] != ':') return std::nullopt;
  return KeyLine{indent, line.substr(at + 1)};
}

// Nothing after the colon but blanks and perhaps a comment: the key opens a section.
bool opens_section(std::string_view rest) {
  const auto first = rest.find_first_not_of(" \t");
  return first == std::string_view::npos || rest[first] == '#';
}

// The hint reads a bounded window of the file: past these, a guess is not worth the time.
constexpr std::size_t kHintLineLength = 4096;
constexpr int kHintLinesAbove = 2000;

// A key indented to a column no key above it uses ("illegal map value", "end of map not found"):
// what the keys around it are indented by, or "" when the line is not such a key.
std::string misaligned_key(const std::vector<std::string>& lines, int error_line) {
  const auto is_content = [](const std::string& line) {
    const auto first = line.find_first_not_of(' ');
    return first != std::string::npos && line[first] != '#';
  };
  if (error_line < 0 || error_line >= static_cast<int>(lines.size()) || lines[error_line].size() > kHintLineLength) return "";
  const auto here = key_line(lines[error_line]);
  if (!here) return "";
  const auto indent = here->indent;
  // The keys above, nearest first, each less indented than the one before: the columns a key may use.
  std::vector<std::pair<int, std::size_t>> levels;  // line, indent
  bool section_above = false;                       // the key just above has no value ("train:")
  for (int n = error_line - 1; n >= 0 && n >= error_line - kHintLinesAbove; --n) {
    if (!is_content(lines[n])) continue;
    const auto above = key_line(lines[n]);
    if (!above) return "";  // a list or a multi-line value: no guess
    const auto column = above->indent;
    if (levels.empty()) section_above = opens_section(above->rest);
    if (levels.empty() || column < levels.back().second) levels.emplace_back(n, column);
    if (column == 0) break;
  }
  if (levels.empty()) return "";
  if (section_above && indent > levels.front().second) return "";  // deeper under a section is right
  for (const auto& [n, column] : levels)
    if (column == indent) return "";
  std::string columns;
  for (const auto& [n, column] : levels)
    columns += (columns.empty() ? "" : " or ") + std::to_string(column) + " (line " + std::to_string(n + 1) + ")";
  return "line " + std::to_string(error_line + 1) + " is indented " + core::counted(static_cast<std::int64_t>(indent), "space") +
         ", but the keys above it are indented " + columns + ": indent it as the other keys of its section";
}

// The last '[' or '{' of `text` left open, outside quotes and comments: line and column, 1-based.
std::optional<std::pair<int, int>> unclosed_bracket(const std::string& text, char open, char close) {
  std::vector<std::pair<int, int>> opened;
  int line = 1, column = 0;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line, column = 0, comment = false;
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'')
      quote = c;
    else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1]))))
      comment = true;
    else if (c == open)
      opened.emplace_back(line, column);
    else if (c == close && !opened.empty())
      opened.pop_back();
  }
  if (opened.empty()) return std::nullopt;
  return opened.back();
}

}  // namespace

// Editors that indent with tabs make the most common broken config; yaml-cpp then reports
// something like "illegal map value" at a column that does not point at the tab. The next most
// common is a key one space off its section's column, then a flow list missing its ']'.
std::string yaml_syntax_remedy(const std::string& text, const std::string& message, int error_line) {
  const bool list = message == YAML::ErrorMsg::END_OF_SEQ_FLOW, map = message == YAML::ErrorMsg::END_OF_MAP_FLOW;
  if (list || map) {
    if (const auto at = unclosed_bracket(text, list ? '[' : '{', list ? ']' : '}'))
      return std::string("the '") + (list ? '[' : '{') + "' at line " + std::to_string(at->first) + ", column " +
             std::to_string(at->second) + " is never closed: end the " + (list ? "list with ']'" : "mapping with '}'");
  }
  std::istringstream stream(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a config saved on Windows
    lines.push_back(line);
  }
  for (int n = std::max(0, error_line - 1); n <= error_line && n < static_cast<int>(lines.size()); ++n) {
    const auto indent = lines[n].find_first_not_of(" \t");
    if (lines[n].substr(0, indent).find('\t') != std::string::npos)
      return "indent with spaces: YAML does not allow tabs, and line " + std::to_string(n + 1) + " starts with one";
  }
  const auto misaligned = misaligned_key(lines, error_line);
  return misaligned.empty() ? "fix the YAML syntax at that line" : misaligned;
}

}  // namespace gputrain::train

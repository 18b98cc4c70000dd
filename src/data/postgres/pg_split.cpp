#include "pg_split.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <type_traits>

namespace gputrain::data::postgres {
namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

std::string upper(std::string word) {
  for (auto& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return word;
}

// A word outside parentheses, quotes and comments: its text (upper case) and where it starts.
struct TopWord {
  std::string text;
  std::size_t at = 0;
};

// Where the quoted text, comment or dollar-quoted body starting at `i` ends (one past it), or
// npos when it does not end; `i` itself when nothing quoted starts there.
std::size_t past_quoted(const std::string& q, std::size_t i) {
  const auto n = q.size();
  const char c = q[i];
  if (c == '-' && i + 1 < n && q[i + 1] == '-') {
    const auto end = q.find('\n', i);
    return end == std::string::npos ? n : end + 1;
  }
  if (c == '/' && i + 1 < n && q[i + 1] == '*') {  // comments nest in PostgreSQL
    int depth = 0;
    for (std::size_t j = i; j + 1 < n; ++j) {
      if (q[j] == '/' && q[j + 1] == '*') {
        ++depth;
        ++j;
      } else if (q[j] == '*' && q[j + 1] == '/') {
        ++j;
        if (--depth == 0) return j + 1;
      }
    }
    return std::string::npos;
  }
  if (c == '\'' || c == '"') {
    // E'...' strings take backslash escapes; the others double the quote to escape it.
    const bool escapes = c == '\'' && i > 0 && (q[i - 1] == 'E' || q[i - 1] == 'e') && (i < 2 || !word_char(q[i - 2]));
    for (std::size_t j = i + 1; j < n; ++j) {
      const bool escaped = (escapes && q[j] == '\\') || (q[j] == c && j + 1 < n && q[j + 1] == c);  // \' or ''
      if (escaped) {
        ++j;
      } else if (q[j] == c) {
        return j + 1;
      }
    }
    return std::string::npos;
  }
  if (c == '$' && (i == 0 || !word_char(q[i - 1])) && i + 1 < n && !std::isdigit(static_cast<unsigned char>(q[i + 1]))) {
    auto tag_end = i + 1;  // $tag$ or $$
    while (tag_end < n && word_char(q[tag_end]) && q[tag_end] != '$') ++tag_end;
    if (tag_end >= n || q[tag_end] != '$') return i;
    const auto tag = q.substr(i, tag_end - i + 1);
    const auto close = q.find(tag, tag_end + 1);
    return close == std::string::npos ? std::string::npos : close + tag.size();
  }
  return i;
}

// The query's top-level words, or nullopt when its quotes do not close, its parentheses do not
// balance, or a ';' ends a statement before its last character.
std::optional<std::vector<TopWord>> top_level_words(const std::string& q) {
  std::vector<TopWord> words;
  int depth = 0;
  for (std::size_t i = 0; i < q.size();) {
    const auto skipped = past_quoted(q, i);
    if (skipped == std::string::npos) return std::nullopt;
    if (skipped != i) {
      i = skipped;
      continue;
    }
    const char c = q[i];
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return std::nullopt;
    if (c == ';' && depth == 0) return std::nullopt;
    if (!word_char(c)) {
      ++i;
      continue;
    }
    auto end = i;
    while (end < q.size() && word_char(q[end])) ++end;
    if (depth == 0) words.push_back({upper(q.substr(i, end - i)), i});
    i = end;
  }
  if (depth != 0) return std::nullopt;
  return words;
}

std::string tid(std::uint64_t block) { return "'(" + std::to_string(block) + ",0)'::tid"; }

// An object's field when it is there with the type asked, else `fallback`: json::value() throws
// on a field of another type, and a server that only speaks PostgreSQL's protocol may write its
// plans otherwise.
template <typename T>
T field_or(const nlohmann::json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto found = object.find(key);
  if (found == object.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>)
    return found->is_string() ? found->template get<std::string>() : fallback;
  else if constexpr (std::is_same_v<T, bool>)
    return found->is_boolean() ? found->template get<bool>() : fallback;
  else
    return found->is_number() ? found->template get<T>() : fallback;
}

// The name a FROM item gives its table's columns when it is one table, `[ONLY] [schema.]table
// [*] [[AS] alias]` (names plain or in double quotes; comments anywhere): the alias, else the
// table's name as written. nullopt for anything else (a join, a sub-query, TABLESAMPLE).
std::optional<std::string> from_item_alias(const std::string& item) {
  std::vector<std::string> tokens;  // identifiers as written, and the punctuation '.' and '*'
  for (std::size_t i = 0; i < item.size();) {
    const auto c = item[i];
    const auto skipped = past_quoted(item, i);
    if (skipped == std::string::npos || (skipped != i && c != '"' && c != '-' && c != '/')) return std::nullopt;  // a string
    if (skipped != i) {
      if (c == '"') tokens.push_back(item.substr(i, skipped - i));
      i = skipped;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '.' || c == '*') {
      tokens.emplace_back(1, c);
      ++i;
    } else if (word_char(c)) {
      auto end = i;
      while (end < item.size() && word_char(item[end])) ++end;
      tokens.push_back(item.substr(i, end - i));
      i = end;
    } else {
      return std::nullopt;
    }
  }
  const auto identifier = [](const std::string& t) { return !t.empty() && (t[0] == '"' || word_char(t[0])); };
  std::size_t at = 0;
  if (at < tokens.size() && upper(tokens[at]) == "ONLY") ++at;
  if (at >= tokens.size() || !identifier(tokens[at])) return std::nullopt;
  std::string name = tokens[at++];
  while (at + 1 < tokens.size() && tokens[at] == "." && identifier(tokens[at + 1])) name = tokens[(at += 2) - 1];
  if (at < tokens.size() && tokens[at] == "*") ++at;
  if (at < tokens.size() && upper(tokens[at]) == "AS") ++at;
  if (at < tokens.size() && identifier(tokens[at])) name = tokens[at++];
  static const std::vector<std::string> clauses = {"TABLESAMPLE", "JOIN", "NATURAL", "CROSS", "LEFT", "INNER", "FULL", "RIGHT"};
  if (at != tokens.size() || std::find(clauses.begin(), clauses.end(), upper(name)) != clauses.end()) return std::nullopt;
  return name;
}

// A plan node's table when it is a scan of `node_type` and nothing else: no child plans, not parallel.
std::optional<std::string> scan_of(const nlohmann::json& node, const std::string& node_type) {
  if (field_or<std::string>(node, "Node Type", "") != node_type || !node.is_object() || node.contains("Plans") ||
      field_or(node, "Parallel Aware", false))
    return std::nullopt;
  const auto schema = field_or<std::string>(node, "Schema", ""), table = field_or<std::string>(node, "Relation Name", "");
  if (schema.empty() || table.empty()) return std::nullopt;
  const auto quoted = [](const std::string& name) {
    std::string out = "\"";
    for (const char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  return quoted(schema) + "." + quoted(table);
}

}  // namespace

std::string without_final_semicolons(const std::string& query) {
  std::size_t last_end = 0;  // one past the last character of the statement itself
  std::vector<std::size_t> semicolons;
  for (std::size_t i = 0; i < query.size();) {
    const auto skipped = past_quoted(query, i);
    if (skipped == std::string::npos) return query;  // unterminated: the server names it
    const bool comment = query.compare(i, 2, "--") == 0 || query.compare(i, 2, "/*") == 0;
    if (skipped != i) {
      if (!comment) last_end = skipped;
      i = skipped;
      continue;
    }
    if (query[i] == ';')
      semicolons.push_back(i);
    else if (!std::isspace(static_cast<unsigned char>(query[i])))
      last_end = i + 1;
    ++i;
  }
  auto text = query;
  for (auto at = semicolons.rbegin(); at != semicolons.rend() && *at >= last_end; ++at) text.erase(*at, 1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::optional<std::string> restricted_to_blocks(const std::string& query, const BlockRange& range) {
  const auto text = without_final_semicolons(query);
  const auto words = top_level_words(text);
  if (!words || words->empty() || (*words)[0].text != "SELECT") return std::nullopt;
  static const std::vector<std::string> refused = {"GROUP",  "ORDER",  "LIMIT", "OFFSET",    "FETCH",  "FOR",
                                                   "WINDOW", "HAVING", "UNION", "INTERSECT", "EXCEPT", "RETURNING"};
  const TopWord* where = nullptr;
  for (const auto& word : *words) {
    if (std::find(refused.begin(), refused.end(), word.text) != refused.end()) return std::nullopt;
    if (word.text == "WHERE" && where) return std::nullopt;
    if (word.text == "WHERE") where = &word;
  }
  auto condition = "ctid >= " + tid(range.first);
  if (range.end) condition += " AND ctid < " + tid(*range.end);
  // On a line of its own: a '--' comment at the query's end must not swallow it.
  if (!where) return text + "\nWHERE " + condition;
  const auto after = where->at + 5;
  return text.substr(0, after) + " (" + text.substr(after) + "\n) AND " + condition;
}

std::vector<BlockRange> block_ranges(std::uint64_t blocks, int streams) {
  const auto n = static_cast<std::uint64_t>(std::max(1, streams));
  // floor(blocks * i / n) without the product, which a count near 2^64 would overflow.
  const auto start = [&](std::uint64_t i) { return i * (blocks / n) + i * (blocks % n) / n; };
  std::vector<BlockRange> ranges;
  for (std::uint64_t i = 0; i < n; ++i) {
    BlockRange range{start(i), std::nullopt};
    if (i + 1 < n) range.end = start(i + 1);
    ranges.push_back(range);
  }
  return ranges;
}

std::vector<std::vector<TablePiece>> deal_blocks(const std::vector<std::uint64_t>& blocks, int streams) {
  std::uint64_t total = 0;
  for (const auto b : blocks) total += b;
  const auto shares = block_ranges(total, streams);  // of the tables' blocks end to end
  std::vector<std::vector<TablePiece>> dealt(shares.size());
  std::uint64_t start = 0;  // the table's first block, counted end to end
  for (std::size_t t = 0; t < blocks.size(); ++t) {
    const auto end = start + blocks[t];
    for (std::size_t i = 0; i < shares.size(); ++i) {
      const auto share_end = shares[i].end.value_or(UINT64_MAX);
      const auto first = std::max(shares[i].first, start), last = std::min(share_end, end);
      const bool holds_empty_table = blocks[t] == 0 && shares[i].first <= start && start < share_end;
      if (first >= last && !holds_empty_table) continue;
      BlockRange range{first - start, std::nullopt};
      if (last != end) range.end = last - start;  // the table's tail stays open-ended
      dealt[i].push_back({t, range});
    }
    start = end;
  }
  dealt.erase(std::remove_if(dealt.begin(), dealt.end(), [](const auto& pieces) { return pieces.empty(); }), dealt.end());
  return dealt;
}

std::int64_t planned_rows(const std::string& explain_json) {
  const auto parsed = nlohmann::json::parse(explain_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array() || parsed.empty() || !parsed[0].contains("Plan")) return 0;
  const auto rows = field_or(parsed[0]["Plan"], "Plan Rows", 0.0);
  return rows > 0 && rows < 9e18 ? static_cast<std::int64_t>(rows) : 0;  // a double past int64 does not convert
}

std::optional<std::string> single_table_scan(const std::string& explain_json, const std::string& node_type) {
  const auto parsed = nlohmann::json::parse(explain_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array() || parsed.size() != 1 || !parsed[0].contains("Plan")) return std::nullopt;
  return scan_of(parsed[0]["Plan"], node_type);
}

std::vector<std::string> appended_scans(const std::string& explain_json, const std::string& node_type) {
  const auto parsed = nlohmann::json::parse(explain_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array() || parsed.size() != 1 || !parsed[0].is_object() || !parsed[0].contains("Plan")) return {};
  const auto& plan = parsed[0]["Plan"];
  if (field_or<std::string>(plan, "Node Type", "") != "Append" || !plan.contains("Plans") || !plan["Plans"].is_array()) return {};
  std::vector<std::string> tables;
  for (const auto& child : plan["Plans"]) {
    const auto table = scan_of(child, node_type);
    if (!table) return {};
    tables.push_back(*table);
  }
  return tables.size() > 1 ? tables : std::vector<std::string>{};
}

std::optional<std::string> restricted_to_table_blocks(const std::string& query, const std::string& table, const BlockRange& range) {
  const auto text = without_final_semicolons(query);
  const auto words = top_level_words(text);
  if (!words) return std::nullopt;
  const auto from = std::find_if(words->begin(), words->end(), [](const TopWord& w) { return w.text == "FROM"; });
  if (from == words->end()) return std::nullopt;
  const auto is_where = [](const TopWord& w) { return w.text == "WHERE"; };
  if (std::any_of(words->begin(), from, is_where)) return std::nullopt;  // no SQL: restricted_to_blocks would use it
  const auto where = std::find_if(from, words->end(), is_where);
  const auto item_start = from->at + 4, item_end = where == words->end() ? text.size() : where->at;
  const auto alias = from_item_alias(text.substr(item_start, item_end - item_start));
  if (!alias) return std::nullopt;
  const auto one_table = text.substr(0, item_start) + " ONLY " + table + " AS " + *alias + "\n" + text.substr(item_end);
  return restricted_to_blocks(one_table, range);
}

}  // namespace gputrain::data::postgres

#include "web_page.hpp"

#include <cctype>
#include <string>
#include <utility>

#include "gputrain/core/units.hpp"

namespace gputrain::core {
namespace {

constexpr std::size_t kGistLength = 160;  // MLflow's 401 text with its link, whole

// The entities page titles use most ("404 &ndash; Hugging Face"), as the characters they stand for.
std::string without_entities(std::string text) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&amp;", "&"},  {"&lt;", "<"},   {"&gt;", ">"},         {"&quot;", "\""},      {"&#39;", "'"},
      {"&apos;", "'"}, {"&nbsp;", " "}, {"&ndash;", "\u2013"}, {"&mdash;", "\u2014"}, {"&middot;", "\u00b7"}};
  for (std::size_t at = text.find('&'); at != std::string::npos; at = text.find('&', at + 1))
    for (const auto& [entity, character] : kEntities)
      if (text.compare(at, std::char_traits<char>::length(entity), entity) == 0) {
        text.replace(at, std::char_traits<char>::length(entity), character);
        break;
      }
  return text;
}

}  // namespace

bool looks_like_web_page(std::string_view text) {
  const auto start = lower(std::string(text.substr(0, 300)));
  for (const char* tag : {"<!doctype html", "<html", "<title", "<body", "<h1"})
    if (start.find(tag) != std::string::npos) return true;
  return false;
}

std::string page_gist(std::string_view page) {
  std::string text;
  const auto low = lower(std::string(page));
  const auto title = low.find("<title");
  const auto title_end = title == std::string::npos ? std::string::npos : low.find('>', title);
  const auto closing = title_end == std::string::npos ? std::string::npos : low.find("</title", title_end);
  const auto source = closing != std::string::npos ? page.substr(title_end + 1, closing - title_end - 1) : page;
  bool in_tag = false;
  for (const char c : source) {  // markup left out, blanks of any kind as one space
    if (c == '<') in_tag = true;
    if (!in_tag && !std::isspace(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) >= 0x20) text += c;
    if (!in_tag && std::isspace(static_cast<unsigned char>(c)) && !text.empty() && text.back() != ' ') text += ' ';
    if (c == '>') in_tag = false;
    if (text.size() > kGistLength) break;
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  text = without_entities(std::move(text));
  if (text.size() > kGistLength) {
    std::size_t cut = kGistLength - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    text = text.substr(0, cut) + "...";
  }
  return text;
}

}  // namespace gputrain::core

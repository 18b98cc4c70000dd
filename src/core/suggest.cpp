#include "gputrain/core/suggest.hpp"

#include <algorithm>
#include <numeric>

#include "gputrain/core/units.hpp"

namespace gputrain::core {

// Optimal string alignment: insertions, deletions, substitutions and swaps of two neighbouring
// letters ("trian" -> "train") each count one, as typing mistakes do.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    before.swap(previous);
    previous.swap(row);
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::min<std::size_t>(3, std::max<std::size_t>(1, word.size() / 3));
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    const std::size_t d = edit_distance(word, candidate);
    // Every letter replaced ("[" for "1", "" for "0") is no typo of it, short as the two may be.
    if (d >= std::max(word.size(), candidate.size())) continue;
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::vector<std::string> likely_choices(std::string_view word, const std::vector<std::string>& choices) {
  const std::string lowered = lower(std::string(word));
  if (lowered.empty()) return {};
  std::vector<std::string> starting;
  for (const auto& choice : choices) {
    if (lower(choice) == lowered) return {choice};
    if (lower(choice).rfind(lowered, 0) == 0) starting.push_back(choice);
  }
  if (!starting.empty()) return starting;
  if (auto best = closest_match(lowered, choices)) return {*best};
  return {};
}

std::string did_you_mean_among(std::string_view word, const std::vector<std::string>& candidates) {
  const auto close = closest_match(word, candidates);
  return close ? "; did you mean '" + *close + "'?" : "";
}

}  // namespace gputrain::core

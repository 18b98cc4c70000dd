#pragma once
// "did you mean ...": the closest known word to a mistyped one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputrain::core {

/// Edit distance counting insertions, deletions, substitutions and swaps of neighbouring letters as 1.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, if it is close enough to be a plausible typo (at most a third
/// of the word's letters differ, and never more than 3; one letter at least is kept).
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// "; did you mean 'virginica'?" when closest_match finds one among `candidates`, else "": the
/// tail of an error about a name that is not among them.
std::string did_you_mean_among(std::string_view word, const std::vector<std::string>& candidates);

/// What a near-miss of a choice most likely meant: the choice in another case ("Adam" -> adam),
/// every choice the word begins ("bf16" -> bf16-mixed; "resnet" -> all three), else the closest
/// typo ("cosin" -> cosine). Empty when nothing is close.
std::vector<std::string> likely_choices(std::string_view word, const std::vector<std::string>& choices);

}  // namespace gputrain::core

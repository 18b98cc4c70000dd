#pragma once
// Formatting of sizes and figures for reports.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::core {

/// Binary size with one or two decimals: 1536 -> "1.50 KiB", 8 GiB -> "8.00 GiB".
std::string format_bytes(std::uint64_t bytes);

/// A number with a fixed count of decimals: format_fixed(3.14159, 2) -> "3.14".
std::string format_fixed(double value, int decimals);

/// Digits grouped in threes: with_commas(178956970) -> "178,956,970".
std::string with_commas(std::uint64_t count);

/// A model's size as people say it: "4,675 parameters" below a million, "11.17 M parameters" above.
std::string format_parameter_count(std::int64_t count);

/// ASCII lower case, for names compared without case: "Adam" -> "adam", ".JPG" -> ".jpg".
std::string lower(std::string text);

/// Words for a message: join({"a", "b"}) -> "a, b"; "" for none.
std::string join(const std::vector<std::string>& words, const std::string& separator = ", ");
/// join() of the first `most` words, then "..." and the count where there are more:
/// join_first({"a", "b", "c"}, 2) -> "a, b, ... (3 in all)". For lists a message may not hold whole.
std::string join_first(const std::vector<std::string>& words, std::size_t most, const std::string& separator = ", ");
/// join() of the first `most` words, then how many more: join_some({"a", "b", "c", "d"}, 2) ->
/// "a, b and 2 more". For a note's examples, where the count left out matters less.
std::string join_some(const std::vector<std::string>& words, std::size_t most);

/// A count with its noun: counted(1, "bucket") -> "1 bucket", counted(2, "GPU") -> "2 GPUs",
/// counted(2, "class") -> "2 classes", counted(2, "epoch") -> "2 epochs" (regular plurals only).
std::string counted(std::int64_t count, const std::string& noun);

/// A size as users write it: "8GiB", "8 GiB", "512MiB", "1.5G" (binary, like nvidia-smi),
/// "8GB" (decimal), "4096" (bytes). nullopt for anything else.
std::optional<std::uint64_t> parse_bytes(const std::string& text);

constexpr std::uint64_t kKiB = 1024ULL;
constexpr std::uint64_t kMiB = 1024ULL * kKiB;
constexpr std::uint64_t kGiB = 1024ULL * kMiB;

}  // namespace gputrain::core

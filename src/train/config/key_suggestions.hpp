#pragma once
// What to suggest for a config key nobody declared ("train.lr" -> optimizer.lr, Hugging Face's
// learning_rate -> optimizer.lr) and for a command-line flag that is a setting (`--epochs 5` ->
// `--set train.epochs=5`). The schema (config_schema.cpp) is the list of keys they search.

#include <string>

namespace gputrain::train {

/// "; did you mean 'optimizer.lr'?" (or another tool's name said as ours), or "" when nothing is close.
std::string did_you_mean(const std::string& key);

/// The keys of `section`, comma-separated, in schema order.
std::string section_keys(const std::string& section);

/// Whether `prefix` is a section ("train", "logging.alerts").
bool is_section(const std::string& prefix);

/// What to do about an unknown key: in a known section, the keys it does have; at the top, the
/// sections; else `elsewhere`.
std::string unknown_key_remedy(const std::string& key, const std::string& elsewhere);

}  // namespace gputrain::train

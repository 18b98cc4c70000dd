#pragma once
// What every fuzz target shares: the input written to a file (the readers take paths, as users
// give them), and the one rule they check: a reader either reads the bytes or refuses them with a
// gputrain::Error (error: ... fix: ...). Anything else that escapes (a std::out_of_range, a raw
// c10::Error, a std::bad_alloc) is what a user would see as a crash or a stack trace: abort, so
// that libFuzzer keeps the input. Crashes, leaks and undefined behaviour the sanitizers catch.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gputrain::fuzz {

/// Writes `data` to a file named `name` (its extension chooses the format, as for users) in this
/// process's own scratch folder and returns the path. The same name is rewritten on every input.
std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size);

/// Runs `read`; a gputrain::Error or a SkippedSample (a refusal a user sees with its fix) is
/// fine, anything else aborts with what escaped and `what_was_read` named.
void expect_read_or_refusal(const std::string& what_was_read, const std::function<void()>& read);

/// The input as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace gputrain::fuzz

#pragma once
// The part of an exception's message a user can act on.

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <system_error>

namespace gputrain::core {

/// `what` less the C++ backtrace LibTorch appends to its errors ("Exception raised from ...
/// frame #0: ...", or the frames alone after an enforce), and less trailing blanks.
std::string without_backtrace(const std::string& what);

/// LibTorch's zip reader's message less the paragraph about miniz it appends to every failure
/// ("... corrupted"): its first sentence says what went wrong.
std::string without_miniz_advice(const std::string& reader_message);

/// The bytes LibTorch's CPU allocator could not allocate, where `what` is its failure
/// ("DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes ..."); none otherwise.
std::optional<std::uint64_t> failed_cpu_allocation_bytes(const std::string& what);

/// The message of an error no part of gputrain put in a user's terms: without_backtrace(what),
/// except that LibTorch's CPU allocator's failure ("[enforce fail at alloc_cpu.cpp:...] ...
/// DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes ...") says the bytes
/// and that they were RAM.
std::string message_for_unexplained(const std::string& what);

/// A fix for an error no part of gputrain put in a user's terms, where its message tells one: an
/// allocator's out-of-memory error (a cap, a device or the host's RAM too small for what had to fit). Empty
/// otherwise.
std::string fix_for_unexplained(const std::string& what);

/// The same for an exception: a thread the system would not start (std::thread's system_error,
/// EAGAIN: the limit on this user's or container's processes) is named with the limit to raise.
std::string message_for_unexplained(const std::exception& error);
std::string fix_for_unexplained(const std::exception& error);

/// A filesystem failure no part of gputrain put in a user's terms (std::filesystem's "filesystem
/// error: status: Permission denied [/data/lost+found]"): the path or paths and the reason, so a
/// folder the user cannot read is named as such.
std::string message_for_filesystem_error(const std::string& path1, const std::string& path2, std::error_code code);

/// Its fix: access for this user where the reason is a permission; empty otherwise.
std::string fix_for_filesystem_error(const std::string& path1, std::error_code code);

/// The first line of `text` (all of it when it has one).
std::string first_line(const std::string& text);

}  // namespace gputrain::core

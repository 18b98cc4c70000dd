#pragma once
// Text that reaches JSON, TensorBoard or safetensors metadata must be UTF-8. Files from Windows
// tools (an Excel "CSV" export, a folder named on a Latin-1 system) often are not; gputrain reads
// such text as Windows-1252, a superset of Latin-1's printable characters, and says so once.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gputrain::core {

/// The offset of the first byte of `text` that does not begin a well-formed UTF-8 sequence
/// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF); nothing when it is UTF-8.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

/// Whether `text` is UTF-8.
inline bool is_utf8(std::string_view text) { return !first_invalid_utf8(text); }

/// `text` read as Windows-1252, in UTF-8. Its five unassigned bytes (0x81, 0x8D, 0x8F, 0x90, 0x9D)
/// become the C1 controls of the same number, as Python's and WHATWG's decoders make them.
std::string windows1252_to_utf8(std::string_view text);

/// `text` as it is when it is UTF-8, else read as Windows-1252.
std::string as_utf8(std::string_view text);

/// `text` in Unicode's composed form (NFC), in place: a name macOS wrote decomposed ("cafe" and a
/// combining accent) becomes the one other systems write ("caf\u00e9"), so that both name one
/// class. ASCII, the common case, is left as it is without a copy; so is text that is not UTF-8.
void to_nfc(std::string& text);

/// `text` with each byte that begins no UTF-8 sequence written as the lone surrogate U+DC80 + byte,
/// encoded as Python's "surrogatepass" does: what Python's pickle reads as `os.fsdecode` of a
/// path, so a checkpoint's text opens in `torch.load` and comes back byte for byte.
std::string surrogate_escaped(std::string_view text);

/// The bytes `surrogate_escaped` wrote; other text as it is.
std::string surrogate_unescaped(std::string_view text);

}  // namespace gputrain::core

#pragma once
// Characters a copy from a web page, a chat or a word processor brings into a config, which YAML
// reads as text where the writer meant its syntax: a no-break space that indents a key (read as
// "unknown key '  lr'"), typographic quotes around a value (“mlp” is no model), a full-width colon
// after a key. The scan is linear, with no std::regex (a long line would overflow its stack).

#include <string>

namespace gputrain::train {

/// Throws UsageError at `origin`:LINE:COLUMN (at `origin` alone when `one_value`: a --set value)
/// for the first such character outside quoted strings, comments and block scalars: a no-break,
/// zero-width or ideographic space (YAML indents and separates with plain spaces), a typographic
/// quote that opens a value (YAML quotes with " and '), a full-width colon after a key (as
/// Chinese and Japanese input writes it). Names the character and says how to replace it.
void refuse_pasted_characters(const std::string& text, const std::string& origin, bool one_value);

}  // namespace gputrain::train

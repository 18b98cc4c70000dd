#pragma once
// A CSV cell's number, read as C's strtod reads it in the C locale.

#include <string_view>

namespace gputrain::data::csv {

/// An optional sign, digits, a '.', an exponent, inf or nan, the whole of `text` (no blanks, no
/// hexadecimal). A value beyond a double is infinite or zero, as strtod gives it. False when
/// `text` is not such a number.
bool parse_number(std::string_view text, double& value);

}  // namespace gputrain::data::csv

#pragma once
// A CSV cell's number, read as C's strtod reads it in the C locale.

#include <optional>
#include <string>
#include <string_view>

namespace gputrain::data::csv {

/// An optional sign, digits, a '.', an exponent, inf or nan, the whole of `text` (no blanks, no
/// hexadecimal). A value beyond a double is infinite or zero, as strtod gives it. False when
/// `text` is not such a number.
bool parse_number(std::string_view text, double& value);

/// A boolean as pandas (True, False), R (TRUE, FALSE) and JSON (true, false) write it: 1 or 0.
/// False for anything else, including yes/no and 1/0's other spellings.
bool parse_boolean(std::string_view text, double& value);

/// How a cell that parse_number refuses may still be a number, written for people: with a
/// decimal comma ("3,5", as spreadsheets in many locales save CSV, with ';' between cells) or with
/// thousands separators ("1,234.5", quoted in a ','-separated file). "1,234" is either: a decimal
/// comma where cells are not separated by ',', thousands otherwise.
enum class ForeignNumber { none, decimal_comma, thousands_separators };
ForeignNumber foreign_number(std::string_view text, char delimiter);

/// A number as a report or a form writes it: with a percent sign ("45%"), a currency sign
/// ("$1,234.50", "1.234,50 €"), digits grouped by spaces ("1 234,5", plain or non-breaking, as
/// French and Swedish group them), a typeset minus ("−3.5", U+2212, from a word processor) or
/// full-width digits ("１２", as Japanese input writes them). `what` names each such thing it has
/// ("a currency sign and a decimal comma"), `decimal_comma` whether its number's decimals follow a
/// comma. Nothing for other text, and for a number parse_number or foreign_number reads.
struct DecoratedNumber {
  std::string what;
  bool decimal_comma = false;
};
std::optional<DecoratedNumber> decorated_number(std::string_view text, char delimiter);

/// A date, a time or both, as exports write them: "2024-03-01", "01/03/2024", "1.3.2024", with or
/// without a time ("2024-03-01 14:05:00", "2024-03-01T14:05:00.5Z", "+01:00" offsets), or a time
/// alone ("14:05"). A column of them is text to the model until it is turned into numbers.
bool is_date_or_time(std::string_view text);

/// A missing value as tools write one: nothing, or one of the markers pandas' read_csv takes for
/// NaN by default ("NA", "N/A", "nan", "NaN", "NULL", "None", "#N/A", ...), so that a count of them
/// is the count pandas' dropna() removes.
bool is_missing(std::string_view text);

/// The usual decimal at the start of [begin, end): an optional '-', at most 19 digits with an
/// optional '.', an optional exponent within +-22 of them. Sets `value` exactly as strtod would
/// and returns where the number ends; nullptr for anything else (which parse_number still reads).
const char* parse_short_decimal(const char* begin, const char* end, double& value);

}  // namespace gputrain::data::csv

#include "number_options.hpp"

#include <charconv>
#include <string>

namespace gputrain::tools {

CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  const std::string range = max == std::numeric_limits<std::int64_t>::max() ? std::to_string(min) + " or more"
                                                                            : "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        const bool digits = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
        const std::string shown = text.size() > 24 ? text.substr(0, 24) + "..." : text;  // a pasted paragraph stays one line
        if (digits && error == std::errc::result_out_of_range) return shown + " is out of range: give a whole number, " + range;
        if (error != std::errc() || stop != end) return "'" + shown + "' is not a whole number: give one, " + range;
        if (value < min) return text + " is too small: give a whole number, " + range;
        if (value > max) return text + " is too large: give a whole number, " + range;
        return "";
      },
      range);
}

}  // namespace gputrain::tools

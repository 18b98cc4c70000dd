#include "text_options.hpp"

namespace gputrain::tools {

std::string empty_value_message(const std::string& what_to_give) {
  return "the value is empty (an unset shell variable?): give " + what_to_give;
}

CLI::Validator required_value(const std::string& what_to_give) {
  return CLI::Validator(
      [what_to_give](std::string& value) {
        if (value.empty()) return empty_value_message(what_to_give);
        // `--master-addr --print-config`: the value left out, the next option taken as it (and so
        // not done). No host, key, size, path or column a user means starts with "--".
        if (value.rfind("--", 0) == 0) return "'" + value + "' is the next option, not this one's value: give " + what_to_give;
        return std::string();
      },
      "");
}

}  // namespace gputrain::tools

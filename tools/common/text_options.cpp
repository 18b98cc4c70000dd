#include "text_options.hpp"

namespace gputrain::tools {

std::string empty_value_message(const std::string& what_to_give) {
  return "the value is empty (an unset shell variable?): give " + what_to_give;
}

CLI::Validator not_empty(const std::string& what_to_give) {
  return CLI::Validator([what_to_give](std::string& value) { return value.empty() ? empty_value_message(what_to_give) : std::string(); },
                        "");
}

}  // namespace gputrain::tools

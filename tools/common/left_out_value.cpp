#include "left_out_value.hpp"

#include <regex>
#include <sstream>
#include <vector>

#include "gputrain/core/units.hpp"

namespace gputrain::tools {
namespace {

// CLI11's type text: "TEXT:{quick,full}", "INT:from 2 to 100000", "HOST", "KEY=VALUE".
struct Takes {
  std::string words;    // "one of quick, full", "a number from 2 to 100000", "HOST"
  std::string example;  // "quick", "2", "HOST"
};

Takes what_it_takes(std::string type) {
  std::string name;  // "PORT" of "PORT:from 1 to 65535": an example better than the range's start
  if (const auto colon = type.find(':'); colon != std::string::npos) {
    name = type.substr(0, colon);
    type = type.substr(colon + 1);
  }
  if (name == "INT" || name == "UINT" || name == "FLOAT" || name == "NUMBER" || name == "TEXT") name.clear();
  if (type.size() > 2 && type.front() == '{' && type.back() == '}') {
    std::vector<std::string> choices;
    std::stringstream list(type.substr(1, type.size() - 2));
    for (std::string choice; std::getline(list, choice, ',');) choices.push_back(choice);
    return {"one of " + core::join(choices), choices.empty() ? type : choices.front()};
  }
  static const std::regex range(R"(from (\S+) to (\S+))");
  if (std::smatch m; std::regex_match(type, m, range)) return {"a number " + type, name.empty() ? m[1].str() : name};
  return {type, type};
}

}  // namespace

std::optional<std::pair<std::string, std::string>> value_left_out(const std::string& message) {
  static const std::regex last(R"(^(--[\w-]+): \d+ required (.+) missing$)");
  static const std::regex next_option(R"(^(--[\w-]+): (--[\w-]+) not in (\{.*\})$)");
  std::smatch m;
  if (std::regex_match(message, m, last)) {
    const auto takes = what_it_takes(m[2].str());
    return std::pair{m[1].str() + " was given no value (it ends the command line): it takes " + takes.words,
                     "give it one, as in " + m[1].str() + " " + takes.example + ", or leave it out"};
  }
  if (std::regex_match(message, m, next_option)) {
    const auto takes = what_it_takes(m[3].str());
    return std::pair{
        "'" + m[2].str() + "' is the next option, not " + m[1].str() + "'s value: " + m[1].str() + " takes " + takes.words,
        "give " + m[1].str() + " its value before the next option, as in " + m[1].str() + " " + takes.example + " " + m[2].str()};
  }
  return std::nullopt;
}

}  // namespace gputrain::tools

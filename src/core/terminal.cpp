#include "gputrain/core/terminal.hpp"

namespace gputrain::core {
namespace {

bool set_on(const EnvLookup& lookup, const char* name) {
  const auto value = lookup(name);
  return value && !value->empty() && *value != "0";
}

}  // namespace

bool color_wanted(bool terminal, bool no_color, const EnvLookup& lookup) {
  if (no_color) return false;
  if (set_on(lookup, "FORCE_COLOR") || set_on(lookup, "CLICOLOR_FORCE")) return true;
  if (lookup("TERM").value_or("") == "dumb") return false;
  return terminal;
}

}  // namespace gputrain::core

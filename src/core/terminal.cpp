#include "gputrain/core/terminal.hpp"

#include <sys/ioctl.h>

#include <cstdlib>

namespace gputrain::core {
namespace {

bool set_on(const EnvLookup& lookup, const char* name) {
  const auto value = lookup(name);
  return value && !value->empty() && *value != "0";
}

}  // namespace

int terminal_columns(int fd, const EnvLookup& lookup) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const auto columns = lookup("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns->c_str(), &end, 10);
    if (end != columns->c_str() && *end == '\0' && value > 0 && value < 10000) return static_cast<int>(value);
  }
  return 80;
}

bool color_wanted(bool terminal, bool no_color, const EnvLookup& lookup) {
  if (no_color) return false;
  if (set_on(lookup, "FORCE_COLOR") || set_on(lookup, "CLICOLOR_FORCE")) return true;
  if (lookup("TERM").value_or("") == "dumb") return false;
  return terminal;
}

}  // namespace gputrain::core

#include "gputrain/checks/check.hpp"

#include <utility>

namespace gputrain::checks {

std::string_view to_string(Status status) {
  switch (status) {
    case Status::pass:
      return "pass";
    case Status::warn:
      return "warn";
    case Status::fail:
      return "fail";
    case Status::skip:
      return "skip";
    case Status::timeout:
      return "timeout";
  }
  return "fail";
}

Result pass(std::string detail, std::vector<Figure> figures) { return {Status::pass, std::move(detail), "", std::move(figures)}; }
Result warn(std::string detail, std::string remedy, std::vector<Figure> figures) {
  return {Status::warn, std::move(detail), std::move(remedy), std::move(figures)};
}
Result fail(std::string detail, std::string remedy, std::vector<Figure> figures) {
  return {Status::fail, std::move(detail), std::move(remedy), std::move(figures)};
}
Result skip(std::string detail) { return {Status::skip, std::move(detail), "", {}}; }

}  // namespace gputrain::checks

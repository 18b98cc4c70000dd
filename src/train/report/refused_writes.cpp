#include "refused_writes.hpp"

#include <cstring>

#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"

namespace gputrain::train {
namespace {

std::string steps_text(std::int64_t first, std::int64_t last) {
  return first == last ? "step " + std::to_string(first) : "steps " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

RefusedWrites::RefusedWrites(std::string path, Warn warn) : path_(std::move(path)), warn_(std::move(warn)) {}

void RefusedWrites::record(std::optional<int> error, std::int64_t step) {
  if (error) {
    last_dropped_step_ = step;
    if (dropped_now_++ == 0) {
      first_dropped_step_ = step;
      refusing_ = error;
      // The warning may be written to this very file (training.log): by now it is marked refused,
      // so a refusal of the warning itself only counts.
      warn_("warning: cannot write '" + path_ + "' (" + std::strerror(*error) + "): its records from step " + std::to_string(step) +
            " on are dropped until the disk takes them again; training goes on. Fix: " + core::write_error_remedy(*error, path_));
    }
    return;
  }
  if (!refusing_) return;
  const auto missing = missing_text();
  refusing_.reset();
  dropped_now_ = 0;
  warn_("'" + path_ + "' is written again from step " + std::to_string(step) + "; " + missing);
}

std::string RefusedWrites::missing_text() const {
  return core::counted(dropped_now_, "record") + " of " + steps_text(first_dropped_step_, last_dropped_step_) +
         (dropped_now_ == 1 ? " is" : " are") + " missing";
}

void RefusedWrites::finish() {
  if (!refusing_) return;
  warn_("warning: '" + path_ + "' could not be written to the end (" + std::strerror(*refusing_) + "): " + missing_text());
}

}  // namespace gputrain::train

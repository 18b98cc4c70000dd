#include "gputrain/memory/oom_guard.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "gputrain/core/units.hpp"

namespace gputrain::memory {
namespace {

std::string first_line(const char* text) {
  std::string line(text);
  const auto end = line.find('\n');
  return end == std::string::npos ? line : line.substr(0, end);
}

}  // namespace

OomExhaustedError::OomExhaustedError(const std::string& message, std::string remedy, OomEvent event)
    : Error(message, std::move(remedy), ExitCode::failure), event_(std::move(event)) {}

OomGuard::OomGuard(c10::Device device, std::int64_t micro_batch, OomPolicy policy, std::string phase)
    : device_(device),
      preferred_(std::max<std::int64_t>(1, micro_batch)),
      micro_batch_(preferred_),
      policy_(policy),
      phase_(std::move(phase)),
      regrow_interval_(policy.regrow_after) {}

OomEvent OomGuard::record(std::int64_t step, std::int64_t old_micro, std::int64_t new_micro, bool regrow, const std::string& what) {
  OomEvent event;
  event.step = step;
  event.phase = phase_;
  event.old_micro_batch = old_micro;
  event.new_micro_batch = new_micro;
  event.regrow = regrow;
  event.memory = memory_figures(device_);
  event.message = what;
  ++oom_count_;
  events_.push_back(event);
  return event;
}

void OomGuard::run(std::int64_t step, std::int64_t rows, const std::function<void(std::int64_t)>& attempt,
                   const std::function<void()>& discard) {
  if (agree_) micro_batch_ = std::max<std::int64_t>(1, agree_(micro_batch_));
  // A regrowth attempt: double back towards the preferred size after enough clean steps.
  std::int64_t fallback = 0;  // the size that worked, should the larger one fail again
  if (regrow_interval_ > 0 && micro_batch_ < preferred_ && clean_steps_ >= regrow_interval_) {
    fallback = micro_batch_;
    micro_batch_ = std::min(preferred_, micro_batch_ * 2);
  }
  bool had_oom = false;  // a step that ran out of memory is not a clean one, even once it recovered
  using Clock = std::chrono::steady_clock;
  const std::size_t first_event = events_.size();
  std::vector<Clock::time_point> caught;  // when each of this step's events was caught
  while (true) {
    try {
      attempt(micro_batch_);
      break;
    } catch (const c10::OutOfMemoryError& e) {
      caught.push_back(Clock::now());
      const std::string what = first_line(e.what_without_backtrace());
      had_oom = true;
      discard();
      const std::int64_t used = std::min(micro_batch_, rows);
      if (fallback > 0) {  // the larger size still does not fit: back to what did, try later
        record(step, used, fallback, /*regrow=*/true, what);
        release_cached_memory(device_);
        micro_batch_ = fallback;
        fallback = 0;
        regrow_interval_ *= 2;
        clean_steps_ = 0;
        continue;
      }
      const std::int64_t halved = (used + 1) / 2;
      const bool can_halve = used > 1 && halvings_ < policy_.max_halvings && halved >= policy_.min_micro_batch;
      if (!can_halve) {
        const auto event = record(step, used, 0, false, what);
        release_cached_memory(device_);
        std::string why = used <= policy_.min_micro_batch || halved < policy_.min_micro_batch
                              ? "oom.min_micro_batch is " + std::to_string(policy_.min_micro_batch)
                              : "oom.max_halvings (" + std::to_string(policy_.max_halvings) + ") are used up";
        throw OomExhaustedError(
            "out of memory in " + phase_ + " step " + std::to_string(step + 1) + " with a micro-batch of " + std::to_string(used) +
                " (started at " + std::to_string(preferred_) + "; " + why + "): " + describe(event.memory) +
                ". The allocator said: " + what,
            "lower train.batch_size and raise train.grad_accum to keep the effective batch, use "
            "train.precision: bf16-mixed, pick a smaller model, or allow more memory (device.max_memory, oom.max_halvings)",
            event);
      }
      record(step, used, halved, false, what);
      release_cached_memory(device_);
      micro_batch_ = halved;
      ++halvings_;
      clean_steps_ = 0;
    }
  }
  if (had_oom) {  // the recovery is done when the work it queued has run
    synchronize(device_);
    const auto done = Clock::now();
    for (std::size_t i = 0; i < caught.size() && first_event + i < events_.size(); ++i)
      events_[first_event + i].recovery_seconds = std::chrono::duration<double>(done - caught[i]).count();
  }
  if (fallback > 0) {  // the regrowth held
    clean_steps_ = 0;
    halvings_ = std::max<std::int64_t>(0, halvings_ - 1);
    regrow_interval_ = policy_.regrow_after;
  } else if (!had_oom) {
    ++clean_steps_;
  }
}

std::vector<OomEvent> OomGuard::take_events() {
  std::vector<OomEvent> out;
  out.swap(events_);
  return out;
}

void OomGuard::set_agreement(std::function<std::int64_t(std::int64_t)> agree) { agree_ = std::move(agree); }

}  // namespace gputrain::memory

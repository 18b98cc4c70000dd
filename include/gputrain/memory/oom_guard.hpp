#pragma once
// memory::OomGuard: runs a step and survives running out of memory. On c10::OutOfMemoryError
// (caught by type, never by message text) it drops the step's partial work, frees the
// allocator's cache, halves the micro-batch and runs the same samples again as more
// micro-batches. The caller's step weights each micro-batch by its share of the samples, so the
// effective batch, the samples seen and the optimizer steps stay exactly what they were.

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/memory/device_memory.hpp"

namespace gputrain::memory {

/// The `oom` section of a config.
struct OomPolicy {
  std::int64_t max_halvings = 3;     ///< halvings in effect at once before giving up; 0: no recovery
  std::int64_t min_micro_batch = 1;  ///< never split below this many samples
  std::int64_t regrow_after = 0;     ///< try the larger micro-batch again after this many clean steps; 0: never
};

/// One out-of-memory event, as metrics.jsonl records it.
struct OomEvent {
  std::int64_t step = 0;  ///< the optimizer step it happened in (0-based: steps done before it)
  std::string phase;      ///< "train" or "validation"
  std::int64_t old_micro_batch = 0;
  std::int64_t new_micro_batch = 0;  ///< 0 when recovery gave up
  bool regrow = false;               ///< it happened while trying a larger micro-batch again
  MemoryFigures memory;              ///< at the moment of the OOM, before the cache was freed
  std::string message;               ///< the allocator's own first line
  /// Seconds from catching this OOM until the step's micro-batches had all run (device
  /// synchronised); -1 when recovery gave up.
  double recovery_seconds = -1;
};

/// Recovery gave up: even the smallest micro-batch allowed does not fit. Exit code 1.
class OomExhaustedError : public Error {
 public:
  OomExhaustedError(const std::string& message, std::string remedy, OomEvent event);
  const OomEvent& event() const noexcept { return event_; }

 private:
  OomEvent event_;
};

class OomGuard {
 public:
  /// `micro_batch`: the size the step starts with (and regrows back to).
  OomGuard(c10::Device device, std::int64_t micro_batch, OomPolicy policy, std::string phase = "train");

  /// Runs attempt(micro_batch) over the `rows` samples of step `step`. On OOM: discard(), free
  /// the cache, halve, run attempt again on the same samples. Throws OomExhaustedError when
  /// the policy allows no further halving; any other exception passes through untouched.
  void run(std::int64_t step, std::int64_t rows, const std::function<void(std::int64_t micro_batch)>& attempt,
           const std::function<void()>& discard);

  /// The micro-batch the next step starts with.
  std::int64_t micro_batch() const { return micro_batch_; }
  /// The micro-batch asked for (what regrowth returns to).
  std::int64_t preferred_micro_batch() const { return preferred_; }
  /// OOM events so far (recovered or not).
  std::int64_t oom_count() const { return oom_count_; }
  /// Events since the last call, oldest first.
  std::vector<OomEvent> take_events();

  /// With several ranks: called at each step boundary with this rank's micro-batch, returns the
  /// one all ranks use (the smallest), so no rank issues a collective the others skip.
  void set_agreement(std::function<std::int64_t(std::int64_t local_micro_batch)> agree);

 private:
  OomEvent record(std::int64_t step, std::int64_t old_micro, std::int64_t new_micro, bool regrow, const std::string& what);

  c10::Device device_;
  std::int64_t preferred_, micro_batch_;
  OomPolicy policy_;
  std::string phase_;
  std::int64_t halvings_ = 0;         // in effect now
  std::int64_t clean_steps_ = 0;      // since the last OOM or regrowth
  std::int64_t regrow_interval_ = 0;  // doubles after each failed regrowth
  std::int64_t oom_count_ = 0;
  std::vector<OomEvent> events_;
  std::function<std::int64_t(std::int64_t)> agree_;
};

}  // namespace gputrain::memory

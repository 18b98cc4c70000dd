#include "gputrain/sizing/batch_search.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::sizing {
namespace {

constexpr double kFasterBy = 1.03;  // a larger micro-batch must beat a smaller one by this to win
// Where the bracket's probe above the estimated full batch goes: its failure makes the answer
// (the default 90 % of it) 95 % of the estimate, which runs unless the estimate is over 5 % high.
// 2 % above made the answer 92 % of the estimate at best; on the MLP's curve as an H200 measured
// it (a unit test) the parabola's estimate is under 1 % high.
constexpr double kAboveFills = 1.06;

std::string figures(const MemoryBudget& budget) {
  return "limit " + core::format_bytes(budget.limit) + " (" + budget.limit_source + "), parameters " +
         core::format_bytes(budget.known.parameters) + ", gradients " + core::format_bytes(budget.known.gradients) + ", optimizer state " +
         core::format_bytes(budget.known.optimizer_state) + ", already allocated " + core::format_bytes(budget.resident);
}

// The answer once memory has run out at `failed`: `fraction` of it, rounded down to the multiple.
std::int64_t bracket_answer(std::int64_t failed, double fraction, std::int64_t multiple) {
  return round_batch(static_cast<std::int64_t>(fraction * static_cast<double>(failed)), multiple);
}

// Where reserved bytes reach `limit`, from the steps that ran (sorted by batch). Reserved bytes
// grow faster at large batches than at small ones (a few MiB of blocks share a 2 MiB segment at
// first; later each block takes 20 MiB segments of its own), so a line through them puts the
// batch that fills memory too high: a measured H200 curve went 8, 15 and 25 KiB a sample between
// probes, and lines missed its largest batch by 10-40 %. Three steps give the curvature: the
// parabola through them (never bent the other way: a staircase's corners can look concave) is
// followed from the largest. With fewer, the fitted line.
double reserved_fills(const std::vector<ProbePoint>& ran, double limit, const std::optional<MemoryModel>& model) {
  const double line = model ? static_cast<double>(model->largest_batch(1.0)) : 0;
  if (ran.size() < 3) return line;
  auto at = [&](std::size_t from_end) {
    const auto& p = ran[ran.size() - 1 - from_end];
    return std::pair{static_cast<double>(p.batch), static_cast<double>(std::max({p.peak, p.optimizer_peak, p.reserved_peak}))};
  };
  const auto [x2, y2] = at(0);
  const auto [x1, y1] = at(1);
  const auto [x0, y0] = at(2);
  const double low_slope = (y1 - y0) / (x1 - x0), high_slope = (y2 - y1) / (x2 - x1);
  const double bend = std::max(0.0, (high_slope - low_slope) / ((x2 - x0) / 2));  // bytes a sample, per sample
  const double slope = high_slope + bend * (x2 - x1) / 2;                         // at x2
  if (slope <= 0 || y2 >= limit) return line;
  const double left = limit - y2;
  const double beyond = bend > 0 ? (std::sqrt(slope * slope + 2 * bend * left) - slope) / bend : left / slope;
  return x2 + beyond;
}

// The next probe between `ran` (the largest batch that ran) and `failed` (the smallest that ran
// out of memory) while the answer, `fraction` of `failed`, is above `ran`. Two probes end the
// search at once: the answer, if it runs, and `ran` / `fraction`, if it fails (the answer then is
// at most `ran`). Where memory `fills` (reserved_fills) decides which to try: at or above the
// answer, the answer; below ran / fraction, that; between the two, kAboveFills above it. An
// estimate that contradicts what ran or failed is passed over: the gap is halved on a log scale
// until one probe can close it (failed <= ran / fraction^2), then the answer is tried.
std::int64_t bracket_probe(std::int64_t ran, std::int64_t failed, double fraction, double fills, std::int64_t multiple) {
  const auto answer = bracket_answer(failed, fraction, multiple);
  const auto proves = static_cast<std::int64_t>(static_cast<double>(ran) / fraction);  // a failure here ends it
  const auto rounded = [&](double batch) { return round_batch(static_cast<std::int64_t>(batch), multiple); };
  std::int64_t batch = answer;
  if (fills <= static_cast<double>(ran) || fills >= static_cast<double>(failed)) {
    if (static_cast<double>(failed) * fraction * fraction > static_cast<double>(ran))
      batch = rounded(std::sqrt(static_cast<double>(ran) * static_cast<double>(failed)));
  } else if (fills < static_cast<double>(answer)) {
    // Not rounded to the multiple when proving: its failure must be at most ran / fraction.
    batch = fills < static_cast<double>(proves) ? proves : rounded(std::ceil(fills * kAboveFills));
  }
  return batch <= ran || batch >= failed ? answer : batch;
}

}  // namespace

std::int64_t round_batch(std::int64_t batch, std::int64_t multiple) {
  if (multiple > 1 && batch >= multiple) return batch / multiple * multiple;
  return std::max<std::int64_t>(1, batch);
}

namespace {

// One search for the largest batch: the probes so far, what they say, and the next step.
class BatchSearch {
 public:
  BatchSearch(const std::function<ProbePoint(std::int64_t)>& probe_step, const MemoryBudget& budget, const BatchSearchOptions& options)
      : probe_(probe_step),
        budget_(budget),
        options_(options),
        max_batch_(std::max<std::int64_t>(1, options.max_batch)),
        lowest_failure_(max_batch_ + 1),
        // At the end of the forward pass, where large batches peak, gradients do not exist yet (they
        // are set to none after every step): what is fixed there is resident memory and optimizer state,
        // and the workspaces libraries made in the first step and keep (cuBLAS's is tens of MiB, more
        // than a small model's activations).
        anchor_(static_cast<double>(budget.resident + budget.known.optimizer_state)) {}

  BatchSearchResult run() {
    std::int64_t candidate = std::min(max_batch_, options_.first_batch);
    while (static_cast<int>(result_.probes.size()) < options_.max_probes) {
      const auto point = probe(candidate);
      take(point, candidate);
      const auto next = result_.reserved_bytes ? bracket_step() : memory_step(candidate);
      if (!next) break;
      candidate = *next;
    }
    if (result_.reserved_bytes && !bracketed_) {
      // Out of probes before the bracket closed: the largest batch that ran, at most the answer.
      best_ = round_batch(std::min(fitted_.back().batch, bracket_answer(lowest_failure_, options_.target_fraction, 1)), options_.multiple);
    }
    if (best_ == 0) {  // every fitting probe exceeded the target: take the smallest that fitted
      if (fitted_.empty())
        throw Error("no probe batch fitted in memory: " + figures(budget_),
                    "use train.precision: bf16-mixed, a smaller model, or allow more memory (device.max_memory)");
      best_ = fitted_.front().batch;
    }
    result_.memory_probes = static_cast<int>(result_.probes.size());
    result_.memory_batch = best_;
    result_.batch = best_;
    explain();
    if (options_.throughput && best_ >= 2) choose_by_throughput();
    return result_;
  }

 private:
  ProbePoint probe(std::int64_t batch) {
    const auto point = probe_(batch);
    result_.probes.push_back(point);
    if (point.fits) anchor_ += static_cast<double>(point.persistent);
    return point;
  }

  // What a probe adds: a failure lowers the bound (and may switch to reserved bytes), a fit
  // refits the model and may be the best so far.
  void take(const ProbePoint& point, std::int64_t candidate) {
    if (!point.fits) {
      lowest_failure_ = std::min(lowest_failure_, candidate);
      if (!result_.reserved_bytes &&
          std::any_of(fitted_.begin(), fitted_.end(), [](const ProbePoint& p) { return p.reserved_peak > p.peak; })) {
        result_.reserved_bytes = true;  // from here the answer is bracketed (below), not read off the line
        result_.model = model_from(fitted_);
      }
      return;
    }
    fitted_.push_back(point);
    std::sort(fitted_.begin(), fitted_.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
    result_.model = model_from(fitted_);
    if (within_target(point)) best_ = std::max(best_, candidate);
  }

  // The bytes the model is fitted to: allocated ones, until a probe runs out of memory where the
  // allocator reports reserved bytes too (CUDA). Its memory fraction limits those, so from then on
  // the model is fitted to them: they overstate a step's need when no cap presses (freed blocks
  // stay cached), which is why they are not the first choice, but an OOM the allocated bytes did
  // not foresee says the allocator's rounding is what decides. That model then only places the
  // bracket's probes (below).
  ProbePoint peak_of(ProbePoint p) const {
    if (result_.reserved_bytes) {
      p.peak = std::max(p.peak, p.reserved_peak);
      p.optimizer_peak = std::max(p.optimizer_peak, p.reserved_peak);
    }
    return p;
  }

  // The peak a batch may reach: the fixed part plus the target fraction of what is left.
  bool within_target(const ProbePoint& p) const {
    const double fixed = result_.model ? result_.model->fixed : anchor_;
    return static_cast<double>(p.peak) <= fixed + options_.target_fraction * (static_cast<double>(budget_.limit) - fixed);
  }

  // The memory model from the probes so far. The first, small probe only sizes the second: its
  // peak is set by gradients and temporaries rather than activations, and a line through it
  // understates the bytes per sample. With one larger probe, the line from the anchor to it
  // (conservative: constants above the anchor count per sample); with more, least squares through
  // the large ones (a quarter of the largest or more; at least the two largest).
  std::optional<MemoryModel> model_from(const std::vector<ProbePoint>& probes) const {
    std::vector<ProbePoint> points;
    for (const auto& p : probes) points.push_back(peak_of(p));
    if (points.size() >= 3) {
      std::vector<ProbePoint> large;
      for (std::size_t i = 1; i < points.size(); ++i)
        if (points[i].batch * 4 >= points.back().batch || i + 2 >= points.size()) large.push_back(points[i]);
      return fit_memory_model(budget_.known, budget_.resident, large, budget_.limit, budget_.limit_source);
    }
    if (points.size() < 2) return std::nullopt;
    ProbePoint origin = points.back();
    origin.batch = 0;
    origin.peak = static_cast<std::uint64_t>(anchor_);
    return fit_memory_model(budget_.known, budget_.resident, origin, points.back(), budget_.limit, budget_.limit_source);
  }

  // Reserved bytes grow in the allocator's segments (2 MiB; 20 MiB for blocks of 1-10 MiB), a
  // staircase that a line through a few probes follows only roughly. So from here the answer
  // is bracketed by steps that ran and failed: the target fraction of the smallest batch that
  // failed, once a batch at least that large has run (so it runs too, and is within the target
  // fraction of the largest batch that does).
  std::optional<std::int64_t> bracket_step() {
    const std::int64_t ran = fitted_.back().batch;
    const auto answer = bracket_answer(lowest_failure_, options_.target_fraction, options_.multiple);
    if (ran >= answer) {
      best_ = answer;
      bracketed_ = true;
      return std::nullopt;
    }
    const auto fills = reserved_fills(fitted_, static_cast<double>(budget_.limit), result_.model);
    const auto next = bracket_probe(ran, lowest_failure_, options_.target_fraction, fills, options_.multiple);
    if (probed(next)) return std::nullopt;
    return next;
  }

  // The next batch worth a step while allocated bytes decide; none when the answer is found.
  std::optional<std::int64_t> memory_step(std::int64_t candidate) {
    bool predicted = false;  // next is the model's largest batch within the target
    std::int64_t next = 0;
    if (fitted_.empty()) {
      if (candidate == 1)
        throw Error("the model does not fit in memory even with a batch of 1: " + figures(budget_),
                    "use train.precision: bf16-mixed, a smaller model, or allow more memory (device.max_memory)");
      next = candidate / 2;
    } else if (result_.model) {
      next = round_batch(std::min(result_.model->largest_batch(options_.target_fraction), max_batch_), options_.multiple);
      predicted = true;
    } else {
      next = rough_step(candidate);
    }
    if (next >= lowest_failure_) {
      predicted = false;
      // Already within the target fraction of a batch that does not fit, so of the largest that does.
      if (best_ > 0 && static_cast<double>(best_) >= options_.target_fraction * static_cast<double>(lowest_failure_)) return std::nullopt;
      next = back_off();
    }
    if (next <= best_) return std::nullopt;  // confirmed: nothing larger is worth a step
    // A batch smaller than one that ran cannot run out of memory, and the refitted model puts it
    // within the target: it needs no step of its own (a probe that fitted but peaked just above
    // the target would otherwise cost one more to walk down by a rounding step).
    if (predicted && std::any_of(fitted_.begin(), fitted_.end(), [&](const auto& p) { return p.batch > next; })) {
      best_ = next;
      return std::nullopt;
    }
    if (probed(next)) return std::nullopt;
    return next;
  }

  // One small probe, whose peak shows gradients and temporaries rather than activations.
  // What its forward pass kept for backward, doubled for backward's own buffers, gives a
  // rough bytes-per-sample; the next probe goes halfway to the maximum it predicts, where
  // activations set the peak.
  std::int64_t rough_step(std::int64_t candidate) const {
    const auto& top = fitted_.back();
    const double kept = static_cast<double>(top.activations) - static_cast<double>(std::min(top.activations, top.persistent));
    const double per_sample = 2.0 * kept / static_cast<double>(top.batch);
    const double rough_max = per_sample > 0 ? options_.target_fraction * (static_cast<double>(budget_.limit) - anchor_) / per_sample : 1e18;
    const auto next = std::max(2 * candidate, static_cast<std::int64_t>(std::min(rough_max / 2, 1e18)));
    return std::min(next, max_batch_);
  }

  // Back off: 90 % of what failed, or halfway to what fitted. When what fitted is far below
  // (the prediction was off by more than 2x), 90 % steps would take many OOMs to get there:
  // halve the gap on a log scale instead.
  std::int64_t back_off() const {
    const auto backoff = static_cast<std::int64_t>(0.9 * static_cast<double>(lowest_failure_));
    auto next = best_ > 0 && lowest_failure_ > 2 * best_
                    ? static_cast<std::int64_t>(std::sqrt(static_cast<double>(best_) * static_cast<double>(lowest_failure_)))
                    : std::max((best_ + lowest_failure_) / 2, backoff);
    next = round_batch(next, options_.multiple);
    if (next >= lowest_failure_) next = round_batch(lowest_failure_ - 1, options_.multiple);
    return next;
  }

  bool probed(std::int64_t batch) const {
    return std::any_of(result_.probes.begin(), result_.probes.end(), [&](const auto& p) { return p.batch == batch; });
  }

  // The search's reason, for the run's note and profile --batch.
  void explain() {
    if (best_ == max_batch_ && !options_.max_batch_reason.empty()) {
      result_.reason = "capped by " + options_.max_batch_reason;
    } else if (result_.reserved_bytes) {
      const auto percent = core::format_fixed(options_.target_fraction * 100, 0) + "% of " + std::to_string(lowest_failure_);
      result_.reason = (bracketed_ ? percent + ", the smallest batch that ran out of memory, and no larger than one that ran"
                                   : "the largest batch that ran within " + std::to_string(options_.max_probes) + " probes, at most " +
                                         percent + ", the smallest that ran out of memory") +
                       " (the memory reserved by the allocator decides here, not the bytes allocated)";
    } else if (result_.model) {
      result_.reason =
          core::format_fixed(options_.target_fraction * 100, 0) + "% of the " +
          core::format_bytes(static_cast<std::uint64_t>(std::max(0.0, static_cast<double>(budget_.limit) - result_.model->fixed))) +
          " left after " + core::format_bytes(static_cast<std::uint64_t>(result_.model->fixed)) + " fixed, at " +
          core::format_bytes(static_cast<std::uint64_t>(result_.model->per_sample)) + " per sample";
    } else {
      result_.reason = "the largest probe that fitted";
    }
  }

  void choose_by_throughput() {
    // Time best, best/2, best/4: each shape once to warm up (cuDNN autotuning, allocator), once timed.
    std::vector<std::pair<std::int64_t, double>> speed;  // batch, samples/s
    for (std::int64_t b : {round_batch(best_ / 4, options_.multiple), round_batch(best_ / 2, options_.multiple), best_}) {
      if (!speed.empty() && speed.back().first >= b) continue;
      probe(b);
      const auto timed = probe(b);
      if (timed.fits && timed.seconds > 0) speed.emplace_back(b, static_cast<double>(b) / timed.seconds);
    }
    if (!speed.empty()) {
      auto chosen = speed.front();
      for (const auto& s : speed)
        if (s.second > chosen.second * kFasterBy) chosen = s;
      if (chosen.first != best_) {
        result_.batch = chosen.first;
        result_.reason = "throughput: " + std::to_string(chosen.first) + " samples/step ran " + core::format_fixed(chosen.second, 0) +
                         " samples/s; larger ones were not >3% faster (memory allows " + std::to_string(best_) + ")";
      }
    }
  }

  const std::function<ProbePoint(std::int64_t)>& probe_;
  const MemoryBudget& budget_;
  const BatchSearchOptions& options_;
  const std::int64_t max_batch_;
  BatchSearchResult result_;
  std::vector<ProbePoint> fitted_;  // probes that fitted, by batch
  std::int64_t best_ = 0;           // largest batch that fitted within the target
  std::int64_t lowest_failure_;
  double anchor_;
  bool bracketed_ = false;  // reserved bytes: the answer is between a batch that ran and one that failed
};

}  // namespace

BatchSearchResult search_batch_size(const std::function<ProbePoint(std::int64_t)>& probe, const MemoryBudget& budget,
                                    const BatchSearchOptions& options) {
  return BatchSearch(probe, budget, options).run();
}

}  // namespace gputrain::sizing

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

BatchSearchResult search_batch_size(const std::function<ProbePoint(std::int64_t)>& probe, const MemoryBudget& budget,
                                    const BatchSearchOptions& options) {
  BatchSearchResult result;
  const std::int64_t max_batch = std::max<std::int64_t>(1, options.max_batch);
  std::vector<ProbePoint> fitted;  // probes that fitted, by batch
  std::int64_t best = 0;           // largest batch that fitted within the target
  std::int64_t lowest_failure = max_batch + 1;
  // At the end of the forward pass, where large batches peak, gradients do not exist yet (they
  // are set to none after every step): what is fixed there is resident memory and optimizer state,
  // and the workspaces libraries made in the first step and keep (cuBLAS's is tens of MiB, more
  // than a small model's activations).
  double anchor = static_cast<double>(budget.resident + budget.known.optimizer_state);
  auto run = [&](std::int64_t batch) {
    const auto point = probe(batch);
    result.probes.push_back(point);
    if (point.fits) anchor += static_cast<double>(point.persistent);
    return point;
  };
  // The bytes the model is fitted to: allocated ones, until a probe runs out of memory where the
  // allocator reports reserved bytes too (CUDA). Its memory fraction limits those, so from then on
  // the model is fitted to them: they overstate a step's need when no cap presses (freed blocks
  // stay cached), which is why they are not the first choice, but an OOM the allocated bytes did
  // not foresee says the allocator's rounding is what decides. That model then only places the
  // bracket's probes (below).
  auto peak_of = [&](ProbePoint p) {
    if (result.reserved_bytes) {
      p.peak = std::max(p.peak, p.reserved_peak);
      p.optimizer_peak = std::max(p.optimizer_peak, p.reserved_peak);
    }
    return p;
  };
  // The peak a batch may reach: the fixed part plus the target fraction of what is left.
  auto within_target = [&](const ProbePoint& p) {
    const double fixed = result.model ? result.model->fixed : anchor;
    return static_cast<double>(p.peak) <= fixed + options.target_fraction * (static_cast<double>(budget.limit) - fixed);
  };

  // The memory model from the probes so far. The first, small probe only sizes the second: its
  // peak is set by gradients and temporaries rather than activations, and a line through it
  // understates the bytes per sample. With one larger probe, the line from the anchor to it
  // (conservative: constants above the anchor count per sample); with more, least squares through
  // the large ones (a quarter of the largest or more; at least the two largest).
  auto model_from = [&](const std::vector<ProbePoint>& probes) -> std::optional<MemoryModel> {
    std::vector<ProbePoint> points;
    for (const auto& p : probes) points.push_back(peak_of(p));
    if (points.size() >= 3) {
      std::vector<ProbePoint> large;
      for (std::size_t i = 1; i < points.size(); ++i)
        if (points[i].batch * 4 >= points.back().batch || i + 2 >= points.size()) large.push_back(points[i]);
      return fit_memory_model(budget.known, budget.resident, large, budget.limit, budget.limit_source);
    }
    if (points.size() < 2) return std::nullopt;
    ProbePoint origin = points.back();
    origin.batch = 0;
    origin.peak = static_cast<std::uint64_t>(anchor);
    return fit_memory_model(budget.known, budget.resident, origin, points.back(), budget.limit, budget.limit_source);
  };

  bool bracketed = false;  // reserved bytes: the answer is between a batch that ran and one that failed
  std::int64_t candidate = std::min(max_batch, options.first_batch);
  while (static_cast<int>(result.probes.size()) < options.max_probes) {
    const auto point = run(candidate);
    if (!point.fits) {
      lowest_failure = std::min(lowest_failure, candidate);
      if (!result.reserved_bytes &&
          std::any_of(fitted.begin(), fitted.end(), [](const ProbePoint& p) { return p.reserved_peak > p.peak; })) {
        result.reserved_bytes = true;  // from here the answer is bracketed (below), not read off the line
        result.model = model_from(fitted);
      }
    } else {
      fitted.push_back(point);
      std::sort(fitted.begin(), fitted.end(), [](const auto& x, const auto& y) { return x.batch < y.batch; });
      result.model = model_from(fitted);
      if (within_target(point)) best = std::max(best, candidate);
    }
    if (result.reserved_bytes) {
      // Reserved bytes grow in the allocator's segments (2 MiB; 20 MiB for blocks of 1-10 MiB), a
      // staircase that a line through a few probes follows only roughly. So from here the answer
      // is bracketed by steps that ran and failed: the target fraction of the smallest batch that
      // failed, once a batch at least that large has run (so it runs too, and is within the target
      // fraction of the largest batch that does).
      const std::int64_t ran = fitted.back().batch;
      const auto answer = bracket_answer(lowest_failure, options.target_fraction, options.multiple);
      if (ran >= answer) {
        best = answer;
        bracketed = true;
        break;
      }
      const auto fills = reserved_fills(fitted, static_cast<double>(budget.limit), result.model);
      const auto next = bracket_probe(ran, lowest_failure, options.target_fraction, fills, options.multiple);
      if (std::any_of(result.probes.begin(), result.probes.end(), [&](const auto& p) { return p.batch == next; })) break;
      candidate = next;
      continue;
    }
    // The next batch worth a step.
    std::int64_t next = 0;
    bool predicted = false;  // next is the model's largest batch within the target
    if (fitted.empty()) {
      if (candidate == 1)
        throw Error("the model does not fit in memory even with a batch of 1: " + figures(budget),
                    "use train.precision: bf16-mixed, a smaller model, or allow more memory (device.max_memory)");
      next = candidate / 2;
    } else if (result.model) {
      next = round_batch(std::min(result.model->largest_batch(options.target_fraction), max_batch), options.multiple);
      predicted = true;
    } else {
      // One small probe, whose peak shows gradients and temporaries rather than activations.
      // What its forward pass kept for backward, doubled for backward's own buffers, gives a
      // rough bytes-per-sample; the next probe goes halfway to the maximum it predicts, where
      // activations set the peak.
      const auto& top = fitted.back();
      const double kept = static_cast<double>(top.activations) - static_cast<double>(std::min(top.activations, top.persistent));
      const double per_sample = 2.0 * kept / static_cast<double>(top.batch);
      const double rough_max = per_sample > 0 ? options.target_fraction * (static_cast<double>(budget.limit) - anchor) / per_sample : 1e18;
      next = std::max(2 * candidate, static_cast<std::int64_t>(std::min(rough_max / 2, 1e18)));
      next = std::min(next, max_batch);
    }
    if (next >= lowest_failure) {
      // Back off: 90 % of what failed, or halfway to what fitted. When what fitted is far below
      // (the prediction was off by more than 2x), 90 % steps would take many OOMs to get there:
      // halve the gap on a log scale instead.
      predicted = false;
      // Already within the target fraction of a batch that does not fit, so of the largest that does.
      if (best > 0 && static_cast<double>(best) >= options.target_fraction * static_cast<double>(lowest_failure)) break;
      const auto backoff = static_cast<std::int64_t>(0.9 * static_cast<double>(lowest_failure));
      next = best > 0 && lowest_failure > 2 * best
                 ? static_cast<std::int64_t>(std::sqrt(static_cast<double>(best) * static_cast<double>(lowest_failure)))
                 : std::max((best + lowest_failure) / 2, backoff);
      next = round_batch(next, options.multiple);
      if (next >= lowest_failure) next = round_batch(lowest_failure - 1, options.multiple);
    }
    if (next <= best) break;  // confirmed: nothing larger is worth a step
    // A batch smaller than one that ran cannot run out of memory, and the refitted model puts it
    // within the target: it needs no step of its own (a probe that fitted but peaked just above
    // the target would otherwise cost one more to walk down by a rounding step).
    if (predicted && std::any_of(fitted.begin(), fitted.end(), [&](const auto& p) { return p.batch > next; })) {
      best = next;
      break;
    }
    if (std::any_of(result.probes.begin(), result.probes.end(), [&](const auto& p) { return p.batch == next; })) break;
    candidate = next;
  }
  if (result.reserved_bytes && !bracketed) {
    // Out of probes before the bracket closed: the largest batch that ran, at most the answer.
    best = round_batch(std::min(fitted.back().batch, bracket_answer(lowest_failure, options.target_fraction, 1)), options.multiple);
  }
  if (best == 0) {  // every fitting probe exceeded the target: take the smallest that fitted
    if (fitted.empty())
      throw Error("no probe batch fitted in memory: " + figures(budget),
                  "use train.precision: bf16-mixed, a smaller model, or allow more memory (device.max_memory)");
    best = fitted.front().batch;
  }
  result.memory_probes = static_cast<int>(result.probes.size());
  result.memory_batch = best;
  result.batch = best;
  if (best == max_batch && !options.max_batch_reason.empty()) {
    result.reason = "capped by " + options.max_batch_reason;
  } else if (result.reserved_bytes) {
    const auto percent = core::format_fixed(options.target_fraction * 100, 0) + "% of " + std::to_string(lowest_failure);
    result.reason = (bracketed ? percent + ", the smallest batch that ran out of memory, and no larger than one that ran"
                               : "the largest batch that ran within " + std::to_string(options.max_probes) + " probes, at most " + percent +
                                     ", the smallest that ran out of memory") +
                    " (the memory reserved by the allocator decides here, not the bytes allocated)";
  } else if (result.model) {
    result.reason = core::format_fixed(options.target_fraction * 100, 0) + "% of the " +
                    core::format_bytes(static_cast<std::uint64_t>(std::max(0.0, static_cast<double>(budget.limit) - result.model->fixed))) +
                    " left after " + core::format_bytes(static_cast<std::uint64_t>(result.model->fixed)) + " fixed, at " +
                    core::format_bytes(static_cast<std::uint64_t>(result.model->per_sample)) + " per sample";
  } else {
    result.reason = "the largest probe that fitted";
  }

  if (options.throughput && best >= 2) {
    // Time best, best/2, best/4: each shape once to warm up (cuDNN autotuning, allocator), once timed.
    std::vector<std::pair<std::int64_t, double>> speed;  // batch, samples/s
    for (std::int64_t b : {round_batch(best / 4, options.multiple), round_batch(best / 2, options.multiple), best}) {
      if (!speed.empty() && speed.back().first >= b) continue;
      run(b);
      const auto timed = run(b);
      if (timed.fits && timed.seconds > 0) speed.emplace_back(b, static_cast<double>(b) / timed.seconds);
    }
    if (!speed.empty()) {
      auto chosen = speed.front();
      for (const auto& s : speed)
        if (s.second > chosen.second * kFasterBy) chosen = s;
      if (chosen.first != best) {
        result.batch = chosen.first;
        result.reason = "throughput: " + std::to_string(chosen.first) + " samples/step ran " + core::format_fixed(chosen.second, 0) +
                        " samples/s; larger ones were not >3% faster (memory allows " + std::to_string(best) + ")";
      }
    }
  }
  return result;
}

}  // namespace gputrain::sizing

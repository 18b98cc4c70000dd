// report.json: a run's figures in one versioned file in its folder, written by rank 0 when the run
// ends (finished, stopped early, out of time, interrupted, or failed: then rank 0's figures
// alone): throughput with the step time's median and 95th percentile, the data stall, the GPU's
// utilisation (mean and 5th percentile of the system readings), peak memory, GPU-hours, the
// alerts, and each rank's figures with the scaling efficiency (docs/monitoring.md). It reads the
// metrics stream (step lines, system readings, alerts) as the other callbacks do.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "builtin_callbacks.hpp"
#include "core/json_text.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::train {
namespace {

using Clock = std::chrono::steady_clock;

// The value at `share` (0..1) of the sorted values, by the nearest rank; null when none.
nlohmann::json percentile(std::vector<double> values, double share) {
  if (values.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(share * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

nlohmann::json mean(const std::vector<double>& values) {
  if (values.empty()) return nullptr;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

nlohmann::json largest(const std::vector<double>& values) {
  return values.empty() ? nlohmann::json(nullptr) : nlohmann::json(*std::max_element(values.begin(), values.end()));
}

// Per rank, in rank order: what each ran, from one sum of rows that are zero but for each rank's
// own (a collective every rank joins). Rank 0's part of the report only.
constexpr std::size_t kRankFigures = 8;

std::vector<double> rank_figures(const FitResult& r, double step_p50) {
  return {static_cast<double>(r.samples),
          r.step_seconds,
          r.data_seconds,
          r.gradient_wait_seconds,
          step_p50,
          r.agreement_seconds,
          r.parameter_share_seconds,
          static_cast<double>(r.optimizer_state_bytes)};
}

nlohmann::json ranks_json(const std::vector<double>& all, std::size_t world) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t rank = 0; rank < world; ++rank) {
    const double* f = all.data() + rank * kRankFigures;
    ranks.push_back({{"rank", rank},
                     {"samples", static_cast<std::int64_t>(f[0])},
                     {"samples_per_second", f[1] > 0 ? f[0] / f[1] : 0.0},
                     {"step_seconds", f[1]},
                     {"data_stall_percent", f[1] > 0 ? 100 * f[2] / f[1] : 0.0},
                     {"gradient_wait_seconds", f[3]},
                     {"step_p50_seconds", f[4]},
                     {"agreement_seconds", f[5]},
                     {"parameter_share_seconds", f[6]},
                     {"optimizer_state_bytes", static_cast<std::int64_t>(f[7])}});
  }
  return ranks;
}

// The share of the ranks' step time not spent waiting for each other: for the gradient all-reduce
// (what backward did not hide), at the step agreements (the slowest rank) and for a sharded
// optimizer's parameter broadcasts. 1 is perfect scaling. Null for one rank.
nlohmann::json scaling_efficiency(const std::vector<double>& all, std::size_t world) {
  if (world < 2) return nullptr;
  double steps = 0, waits = 0;
  for (std::size_t rank = 0; rank < world; ++rank) {
    steps += all[rank * kRankFigures + 1];
    waits += all[rank * kRankFigures + 3] + all[rank * kRankFigures + 5] + all[rank * kRankFigures + 6];
  }
  return steps > 0 ? nlohmann::json(1 - waits / steps) : nlohmann::json(nullptr);
}

std::string outcome_of(const FitResult& r) {
  if (!r.error.empty()) return "failed";
  if (r.interrupted) return "interrupted";
  if (!r.early_stop_reason.empty()) return "early_stop";
  if (r.time_limit_reached) return "time_limit";
  return r.steps >= r.total_steps ? "finished" : "stopped";
}

class RunReport final : public Callback {
 public:
  std::string name() const override { return "run_report"; }

  void on_fit_start(RunControl& run) override {
    started_ = Clock::now();
    on_gpu_ = model_device(run.model()).is_cuda();
  }
  void on_step_end(RunControl&, std::int64_t) override {
    const auto now = Clock::now();
    if (last_step_end_ && !interrupted_) step_seconds_.push_back(std::chrono::duration<double>(now - *last_step_end_).count());
    last_step_end_ = now;
    interrupted_ = false;
  }
  // The step after a validation or a checkpoint would count them: it is left out.
  void on_before_checkpoint(RunControl&, const LossWindow*) override { interrupted_ = true; }
  void on_validation_end(RunControl&, const EpochMetrics&) override { interrupted_ = true; }
  void on_log(RunControl&, const StepMetrics& m, const LossWindow&) override {
    device_peak_ = std::max(device_peak_, static_cast<double>(m.memory_peak));
  }
  void on_record(RunControl&, const MetricRecord& record) override {
    if (record.kind == "alert") {
      for (const auto& [key, text] : record.texts)
        if (key == "alert") ++alerts_[text];
      return;
    }
    if (record.kind != "system") return;
    for (const auto& [key, value] : record.figures) {
      if (key == "gpu_utilization_percent") utilization_.push_back(value);
      if (key == "gpu_memory_used_bytes") gpu_used_.push_back(value);
      if (key == "host_rss_bytes") host_rss_.push_back(value);
    }
  }
  void on_fit_end(RunControl& run, FitResult& result) override {
    const std::int64_t world = std::max<std::int64_t>(1, run.progress().world_size);
    const auto p50 = percentile(step_seconds_, 0.5);
    std::vector<double> per_rank(kRankFigures * static_cast<std::size_t>(world), 0.0);
    const auto mine = rank_figures(result, p50.is_null() ? 0.0 : p50.get<double>());
    std::copy(mine.begin(), mine.end(),
              per_rank.begin() + static_cast<std::ptrdiff_t>(kRankFigures * static_cast<std::size_t>(result.rank)));
    if (world > 1) per_rank = run.sum_over_ranks(per_rank, "report.json's per-rank figures");
    if (run.writer()) write(run, result, per_rank, world);
  }
  // A failed run's report: rank 0's own figures, since its peers may be gone.
  void on_fit_failed(RunControl& run, const FitResult& result) override {
    if (!run.writer()) return;
    const auto p50 = percentile(step_seconds_, 0.5);
    write(run, result, rank_figures(result, p50.is_null() ? 0.0 : p50.get<double>()), 1);
  }

 private:
  // `per_rank`: kRankFigures for each of `ranks` ranks.
  void write(RunControl& run, const FitResult& result, const std::vector<double>& per_rank, std::int64_t ranks) {
    const std::int64_t world = std::max<std::int64_t>(1, run.progress().world_size);
    const double wall = std::chrono::duration<double>(Clock::now() - started_).count();
    const std::int64_t devices = on_gpu_ ? world : 0;
    nlohmann::json alerts = nlohmann::json::object();
    for (const auto& [name, count] : alerts_) alerts[name] = count;
    const nlohmann::json report = {
        {"schema", "gputrain.report/1"},
        {"outcome", outcome_of(result)},
        {"steps", result.steps},
        {"start_step", result.start_step},
        {"total_steps", result.total_steps},
        {"epochs_done", result.epochs_done},
        {"samples", result.samples},
        {"world_size", world},
        {"wall_seconds", wall},
        {"samples_per_second", result.samples_per_second},
        {"step_seconds",
         {{"mean", mean(step_seconds_)},
          {"p50", percentile(step_seconds_, 0.5)},
          {"p95", percentile(step_seconds_, 0.95)},
          {"steps_timed", step_seconds_.size()}}},
        {"data_stall_percent", result.data_stall_percent},
        {"gpu_utilization_percent",
         {{"mean", mean(utilization_)}, {"p5", percentile(utilization_, 0.05)}, {"readings", utilization_.size()}}},
        {"memory_peak_bytes", {{"device", device_peak_}, {"gpu_used", largest(gpu_used_)}, {"host_rss", largest(host_rss_)}}},
        {"gpu_hours", static_cast<double>(devices) * wall / 3600},
        {"ranks", ranks_json(per_rank, static_cast<std::size_t>(ranks))},
        {"scaling_efficiency", scaling_efficiency(per_rank, static_cast<std::size_t>(ranks))},
        {"alerts", {{"total", result.alerts}, {"by_name", alerts}}},
        {"error", result.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.error)}};
    const auto path = (std::filesystem::path(run.config().logging.dir) / "report.json").string();
    if (!std::filesystem::is_directory(run.config().logging.dir)) {  // deleted under the run: not made again for the report alone
      run.warn("report.json was not written: the run's folder " + run.config().logging.dir + " is gone");
      return;
    }
    try {
      core::write_file_atomically(path, core::json_text(report, 2) + "\n");
    } catch (const std::exception& e) {  // the run's outcome stands; the report is a summary of it
      run.warn("report.json was not written: " + std::string(e.what()));
    }
  }

  Clock::time_point started_;
  std::optional<Clock::time_point> last_step_end_;
  bool interrupted_ = false, on_gpu_ = false;
  std::vector<double> step_seconds_, utilization_, gpu_used_, host_rss_;
  double device_peak_ = 0;
  std::map<std::string, std::int64_t> alerts_;
};

}  // namespace

std::unique_ptr<Callback> run_report_callback() { return std::make_unique<RunReport>(); }

}  // namespace gputrain::train

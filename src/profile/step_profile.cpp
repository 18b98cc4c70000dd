#include "gputrain/profile/step_profile.hpp"

#include <signal.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <ATen/record_function.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/json_text.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/device/utilization.hpp"
#include "gputrain/profile/gpu_span_timer.hpp"
#include "gputrain/profile/loader_sweep.hpp"
#include "gputrain/train/callback.hpp"
#include "gputrain/train/trainer.hpp"
#include "profile/launch_counter.hpp"

namespace gputrain::profile {
namespace {

namespace fs = std::filesystem;

// The step lines' figures of the timed windows (each line is one window), as the loop reports
// them: a callback on the run, so nothing goes through a file.
class TimedWindows final : public train::Callback {
 public:
  TimedWindows(std::int64_t first_timed_step, std::int64_t last_timed_step)
      : first_timed_step_(first_timed_step), last_timed_step_(last_timed_step) {}
  std::string name() const override { return "profile_step_windows"; }

  void on_log(train::RunControl&, const train::StepMetrics& m, const train::LossWindow& window) override {
    if (m.step <= first_timed_step_ || m.step > last_timed_step_) return;  // wholly after the warm-up, before the counted steps
    steps_ += window.last_step - window.first_step + 1;
    data_seconds_ += m.data_seconds;
    step_seconds_ += m.data_seconds + m.compute_seconds;
    samples_per_second_ += m.samples_per_second;
    ++windows_;
  }

  // Per step (each window's figures already are), averaged over the windows.
  void fill(StepProfile& p) const {
    p.steps = steps_;
    if (windows_ == 0) return;
    p.data_wait_seconds = data_seconds_ / windows_;
    p.step_seconds = step_seconds_ / windows_;
    p.samples_per_second = samples_per_second_ / windows_;
  }

 private:
  const std::int64_t first_timed_step_, last_timed_step_;
  std::int64_t steps_ = 0;
  int windows_ = 0;
  double data_seconds_ = 0, step_seconds_ = 0, samples_per_second_ = 0;
};

// Counts the ATen operators dispatched on any thread (autograd's included) while it lives.
class OpCounter {
 public:
  OpCounter() {
    count_ = 0;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback([](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
                                      count_.fetch_add(1, std::memory_order_relaxed);
                                      return nullptr;
                                    }).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;
  std::int64_t count() const { return count_.load(); }

 private:
  static inline std::atomic<std::int64_t> count_{0};
  at::CallbackHandle handle_;
};

// The host's time per step, from its batch to the step's end, over the timed steps that made
// no step line (a line waits for the device).
struct HostTime {
  std::chrono::steady_clock::time_point batch_at;
  double seconds = 0;
  std::int64_t steps = 0;
};

// NVML's utilisation over the timed steps alone: the operator-counted steps after them and the
// run's end (its last checkpoint) leave the GPU idle and would pull the figure down.
struct UtilizationWindow {
  std::unique_ptr<device::UtilizationSampler> sampler;
  std::chrono::steady_clock::time_point from;
  std::optional<double> percent;
  std::string unavailable;
  double seconds = 0;

  void start(unsigned gpu) {
    sampler = std::make_unique<device::UtilizationSampler>(gpu);
    from = std::chrono::steady_clock::now();
  }
  void stop() {
    if (!sampler) return;
    percent = sampler->stop();
    if (!percent) unavailable = sampler->unavailable();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
    sampler.reset();
  }
};

// The step's parts as shares of it.
void derive_shares(StepProfile& p) {
  p.compute_seconds = p.step_seconds - p.data_wait_seconds;
  p.data_stall_percent = p.step_seconds > 0 ? 100.0 * p.data_wait_seconds / p.step_seconds : 0;
  if (p.gpu_data_wait_seconds) p.gpu_data_stall_percent = p.step_seconds > 0 ? 100.0 * *p.gpu_data_wait_seconds / p.step_seconds : 0;
}

// The copy to the GPU overlaps compute on a side stream; its share is estimated from the bytes
// of a batch and the pinned-copy ceiling measured here.
void estimate_copy(StepProfile& p, const train::RunDevice& run, std::uint64_t batch_bytes, const std::string& data_cache) {
  p.pinned_copy_gbps = measure_pinned_copy_gbps(run.device);
  p.batch_bytes = batch_bytes;
  if (run.device.is_cuda() && data_cache != "vram" && p.pinned_copy_gbps > 0)
    p.h2d_copy_seconds_estimate = static_cast<double>(p.batch_bytes) / (p.pinned_copy_gbps * 1e9);
}

// 5 steps more, traced (train.profile into `dir`): last, since the profiler slows what it watches.
// One untraced step before them: the launch count's profiler session ends after the step whose
// end starts the trace's, and two sessions cannot overlap.
void trace_last_steps(train::Config& config, const fs::path& dir) {
  constexpr std::int64_t traced = 5;
  config.train.profile_start_step = config.train.max_steps + 2;
  config.train.profile_steps = traced;
  config.train.profile_dir = dir.string();
  config.train.max_steps += 1 + traced;
}

// The operators (and on a CUDA GPU the launches) of the counted steps, per step.
struct CountedSteps {
  std::unique_ptr<OpCounter> ops;
  std::unique_ptr<LaunchCounter> launches;
  std::int64_t ops_counted = 0;
  std::optional<LaunchCounts> launch_counts;
  std::string launches_unavailable;

  void start(bool cuda) {
    ops = std::make_unique<OpCounter>();
    if (cuda) launches = std::make_unique<LaunchCounter>();
  }
  void stop() {
    if (ops) ops_counted = ops->count();
    ops.reset();
    if (!launches) return;
    launch_counts = launches->stop();
    launches_unavailable = launches->why();
    launches.reset();
  }
  void fill(StepProfile& p, std::int64_t steps) const {
    const auto per_step = [steps](std::int64_t n) { return static_cast<double>(n) / static_cast<double>(steps); };
    p.host_ops_per_step = per_step(ops_counted);
    p.launches_unavailable = launches_unavailable;
    if (!launch_counts) return;
    p.kernel_launches_per_step = per_step(launch_counts->kernel_launches);
    p.graph_launches_per_step = per_step(launch_counts->graph_launches);
    p.gpu_kernels_per_step = per_step(launch_counts->gpu_kernels);
    if (launch_counts->gpu_busy) p.gpu_busy_percent = 100 * *launch_counts->gpu_busy;
  }
};

// Moves the probe run's trace to where --trace asked for it (its folders made).
void keep_trace(const fs::path& from, const fs::path& to) {
  if (!fs::exists(from)) throw Error("the profiler wrote no trace (" + from.string() + ")", "run with --log-level debug and report it");
  core::make_folders_for_file(to.string(), "--trace");
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) {  // another file system: copy, then the probe folder goes
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("cannot write the trace to " + to.string() + ": " + ec.message(), "give --trace a path in a folder you can write");
  }
}

// "on" or "off (why)", from the probe run's start record.
std::string cuda_graphs_of(const fs::path& run_dir) {
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("kind", "") == "start") return record.value("cuda_graphs", "");
  }
  return "";
}

// The probe runs' folders are removed when they end; one whose process was killed (Ctrl-C, a
// time limit) is removed by the next --step, once no process of its id is left.
void remove_folders_of_killed_probes(const fs::path& temp) {
  const std::string prefix = "gputrain-profile-step-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(temp, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const auto pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

// Removes the probe run's folder however profile_steps ends (a step that fails included).
struct FolderRemover {
  fs::path path;
  ~FolderRemover() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The config as the probe run trains it: `window + timed` steps, nothing kept.
void probe_run_config(train::Config& config, std::int64_t window, std::int64_t timed, const std::string& dir) {
  config.train.max_steps = window + timed;
  config.train.epochs = std::max<std::int64_t>(config.train.epochs, 1000000);  // steps decide
  config.train.max_time = 0;  // the config's time budget is for training, not for this measurement
  // Everything the probe run writes goes to a folder of its own, removed after: never into the
  // config's run or checkpoint folders, whose checkpoints keep_last would otherwise rotate away.
  config.logging.dir = dir;
  config.origins.erase("logging.dir");  // this command's folder, not the config file's (a run's own config.yaml names its run)
  config.checkpoint.dir.clear();
  config.logging.progress = "off";
  config.logging.tensorboard = false;
  config.logging.mlflow = {};           // a measurement, not a run to track
  config.train.profile_start_step = 0;  // the config's own trace window: --trace is this command's (and
  config.train.profile_dir.clear();     // two profiler sessions cannot overlap the launch count's)
  config.logging.jsonl = true;          // its start record says whether the steps were captured
  config.logging.every_steps = window;
  config.checkpoint.every_steps = 0;
  config.checkpoint.every_epochs = 0;
  config.checkpoint.resume = "never";
  config.checkpoint.best_metric = "none";
}

}  // namespace

StepProfile profile_steps(train::Config config, const train::RunDevice& run, int steps, const std::string& trace_path) {
  // The first window is warm-up (cuDNN autotuning, the allocator growing its pool, first-use
  // library loads): it is run, and neither timed nor sampled.
  const std::int64_t window = std::min(steps, 10);
  const std::int64_t timed = (steps + window - 1) / window * window;
  const std::int64_t counted = 5;  // steps after the timed ones, their operators counted (the count slows them)
  const auto temp = fs::temp_directory_path();
  remove_folders_of_killed_probes(temp);
  const FolderRemover remover{temp / ("gputrain-profile-step-" + std::to_string(::getpid()))};
  probe_run_config(config, window, timed, remover.path.string());
  config.train.max_steps += counted;
  if (!trace_path.empty()) trace_last_steps(config, remover.path / "traces");
  UtilizationWindow utilization;
  std::unique_ptr<GpuSpanTimer> feed_timer;  // the feed, timed on the GPU
  std::ostringstream notes;
  train::TrainerOptions options;
  options.console = &notes;
  auto windows = std::make_shared<TimedWindows>(window, window + timed);
  CountedSteps counting;
  const std::int64_t counted_last = window + timed + counted;
  HostTime host;
  options.callbacks.push_back(windows);
  // A large model on the CPU takes seconds a step: how far the steps are, every 5 s.
  auto last_said = std::chrono::steady_clock::now();
  options.after_step = [&, total = config.train.max_steps](std::int64_t step) {
    if (step > window && step <= window + timed && step % window != 0) {
      host.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - host.batch_at).count();
      ++host.steps;
    }
    if (step == window + timed) counting.start(run.device.is_cuda());
    if (step == counted_last) counting.stop();
    if (run.device.is_cuda() && step == window) {
      utilization.start(static_cast<unsigned>(run.device.index()));
      feed_timer = std::make_unique<GpuSpanTimer>(run.device);
    }
    if (step == window + timed) utilization.stop();
    if (std::chrono::steady_clock::now() - last_said < std::chrono::seconds(5) || step == total) return;
    last_said = std::chrono::steady_clock::now();
    const char* part = step <= window ? " (warm-up)" : step <= window + timed ? " (timed)" : " (counting operators, then tracing)";
    std::cerr << "profile --step: step " << step << " of " << total << part << "\n";
  };
  options.before_batch = [&] {
    if (feed_timer) feed_timer->begin();
  };
  options.on_batch = [&](const data::Batch&) {
    if (feed_timer) feed_timer->end();
    host.batch_at = std::chrono::steady_clock::now();
  };
  const auto result = train::Trainer(config, options).fit();
  utilization.stop();  // when the run ended before its timed steps did
  counting.stop();     // or before its counted ones
  if (!trace_path.empty())
    keep_trace(fs::path(config.train.profile_dir) / ("trace-step" + std::to_string(config.train.profile_start_step) + ".json"), trace_path);

  StepProfile p;
  p.device = run.device.str();
  p.model = result.model;
  p.data_cache = result.data_cache;
  p.warmup_steps = window;
  p.batch_size = result.batch_size;
  windows->fill(p);
  p.cuda_graphs = cuda_graphs_of(remover.path);
  if (host.steps > 0) p.host_seconds_per_step = host.seconds / static_cast<double>(host.steps);
  counting.fill(p, counted);
  p.gpu_utilization_percent = utilization.percent;
  p.utilization_unavailable = utilization.unavailable;
  p.utilization_seconds = utilization.seconds;
  if (feed_timer && feed_timer->spans() > 0) p.gpu_data_wait_seconds = feed_timer->seconds() / static_cast<double>(feed_timer->spans());
  derive_shares(p);
  estimate_copy(p, run, static_cast<std::uint64_t>(result.sample_bytes * result.batch_size * config.train.grad_accum), result.data_cache);
  // On a GPU, the GPU's own account of its wait decides: the host's also holds launches that
  // blocked on a full queue, which is compute, not data.
  // CUPTI's busy share where there is one: NVML's utilisation is the same measure, sampled.
  p.verdict = judge_step(p.gpu_data_stall_percent.value_or(p.data_stall_percent),
                         p.gpu_busy_percent ? p.gpu_busy_percent : p.gpu_utilization_percent);
  return p;
}

std::string step_profile_json(const StepProfile& p) {
  nlohmann::json out = {{"schema", "gputrain.profile.step/1"},
                        {"device", p.device},
                        {"warmup_steps", p.warmup_steps},
                        {"steps", p.steps},
                        {"batch_size", p.batch_size},
                        {"data_cache", p.data_cache},
                        {"step_seconds", p.step_seconds},
                        {"data_wait_seconds", p.data_wait_seconds},
                        {"compute_seconds", p.compute_seconds},
                        {"h2d_copy_seconds_estimate", p.h2d_copy_seconds_estimate},
                        {"data_stall_percent", p.data_stall_percent},
                        {"samples_per_second", p.samples_per_second},
                        {"pinned_copy_gbps", p.pinned_copy_gbps},
                        {"host_seconds_per_step", p.host_seconds_per_step},
                        {"host_ops_per_step", p.host_ops_per_step},
                        {"cuda_graphs", p.cuda_graphs},
                        {"verdict", to_string(p.verdict)}};
  const auto or_null = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  out["gpu_data_wait_seconds"] = or_null(p.gpu_data_wait_seconds);
  out["gpu_data_stall_percent"] = or_null(p.gpu_data_stall_percent);
  out["gpu_utilization_percent"] = or_null(p.gpu_utilization_percent);
  out["gpu_utilization_seconds"] = p.utilization_seconds;
  out["kernel_launches_per_step"] = or_null(p.kernel_launches_per_step);
  out["graph_launches_per_step"] = or_null(p.graph_launches_per_step);
  out["gpu_kernels_per_step"] = or_null(p.gpu_kernels_per_step);
  out["gpu_busy_percent"] = or_null(p.gpu_busy_percent);
  return core::json_text(out, 2);
}

std::string step_profile_text(const StepProfile& p) {
  const bool gpu = p.device.rfind("cuda", 0) == 0;
  char line[256];
  std::string out;
  const auto add = [&](int n) { out.append(line, static_cast<std::size_t>(std::max(0, std::min<int>(n, sizeof line - 1)))); };
  add(std::snprintf(line, sizeof line, "%lld training steps of %s on %s after %lld warm-up steps, batch %lld, data.cache %s\n",
                    static_cast<long long>(p.steps), p.model.c_str(), p.device.c_str(), static_cast<long long>(p.warmup_steps),
                    static_cast<long long>(p.batch_size), p.data_cache.c_str()));
  add(std::snprintf(line, sizeof line, "  per step            %9.2f ms\n", p.step_seconds * 1e3));
  add(std::snprintf(line, sizeof line, "  waiting for data    %9.2f ms  (%s %% of the time: the data stall)\n", p.data_wait_seconds * 1e3,
                    core::format_fixed(p.data_stall_percent, 1).c_str()));
  add(std::snprintf(line, sizeof line, "  compute             %9.2f ms\n", p.compute_seconds * 1e3));
  if (p.gpu_data_wait_seconds)
    add(std::snprintf(line, sizeof line, "  GPU waiting for data%9.2f ms  (%s %% of the step, on the GPU's clock: decides the verdict)\n",
                      *p.gpu_data_wait_seconds * 1e3, core::format_fixed(*p.gpu_data_stall_percent, 1).c_str()));
  if (gpu)
    add(std::snprintf(line, sizeof line,
                      "  host-to-device copy %9.2f ms  (estimated: %s per step at the measured %s GB/s pinned ceiling; overlaps compute)\n",
                      p.h2d_copy_seconds_estimate * 1e3, core::format_bytes(p.batch_bytes).c_str(),
                      core::format_fixed(p.pinned_copy_gbps, 1).c_str()));
  add(std::snprintf(line, sizeof line,
                    "  host per step       %9.2f ms  (the host's own work; near the step when the host keeps the %s waiting)\n",
                    p.host_seconds_per_step * 1e3, gpu ? "GPU" : "device"));
  add(std::snprintf(line, sizeof line, "  host ops per step   %9.0f     (ATen operators dispatched; cuda graphs %s)\n", p.host_ops_per_step,
                    p.cuda_graphs.c_str()));
  if (p.gpu_kernels_per_step)
    add(std::snprintf(line, sizeof line,
                      "  launches per step   %9.0f     (kernels the host launched, and %.0f CUDA graphs; the GPU ran %.0f kernels)\n",
                      *p.kernel_launches_per_step, *p.graph_launches_per_step, *p.gpu_kernels_per_step));
  else if (gpu)
    add(std::snprintf(line, sizeof line, "  launches per step       n/a  (%s)\n", p.launches_unavailable.c_str()));
  if (p.gpu_busy_percent)
    add(std::snprintf(
        line, sizeof line,
        "  GPU busy            %9s %%  (a kernel or copy running, from CUPTI's times over those steps: decides the verdict)\n",
        core::format_fixed(*p.gpu_busy_percent, 1).c_str()));
  add(std::snprintf(line, sizeof line, "  throughput          %9s samples/s\n", core::format_fixed(p.samples_per_second, 0).c_str()));
  // NVML's figure is an average over its own period (up to a second): a short window reads low.
  const bool short_window = p.utilization_seconds < 2.0;
  if (p.gpu_utilization_percent)
    add(std::snprintf(line, sizeof line, "  GPU utilisation     %9s %%  (NVML every 100 ms over the timed steps' %s s%s)\n",
                      core::format_fixed(*p.gpu_utilization_percent, 0).c_str(), core::format_fixed(p.utilization_seconds, 2).c_str(),
                      short_window ? "; under 2 s it reads low: more --steps steady it" : ""));
  else if (gpu)
    add(std::snprintf(line, sizeof line, "  GPU utilisation         n/a  (%s)\n", p.utilization_unavailable.c_str()));
  return out + "  verdict: " + advice(p.verdict) + "\n";
}

}  // namespace gputrain::profile

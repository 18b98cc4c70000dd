// train.profile: the CPU and CUDA activity of a few steps in a trace that Perfetto UI and
// chrome://tracing open (Chrome Trace Format, LibTorch's Kineto profiler). gputrain names its
// ranges (gputrain::data_wait, ::forward, ::backward, ::optimizer, ::graph_replay,
// ::allreduce_bucket_N, ::checkpoint, ::validation) with RecordFunction scopes, which cost nothing
// while no profiler listens. Rank 0 traces (its all-reduces show the others' pace):
// <dir>/trace-step<first>.json.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "builtin_callbacks.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::train {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

class ProfilerTrace final : public Callback {
 public:
  explicit ProfilerTrace(const Config& config)
      : first_(config.train.profile_start_step),
        last_(config.train.profile_start_step + config.train.profile_steps - 1),
        dir_(config.trace_dir()) {}
  // A profiler left on when the process exits crashes it in LibTorch's teardown (SIGSEGV).
  ~ProfilerTrace() override {
    if (!on_) return;
    try {
      profiler::disableProfiler();
    } catch (...) {
    }
  }
  std::string name() const override { return "profiler_trace"; }

  void on_fit_start(RunControl& run) override {
    cuda_ = model_device(run.model()).is_cuda();
    traces_ = run.writer();
    // Off a GPU, Kineto's one message is an ERROR line about the GPUs it cannot count, written
    // with the trace: silenced (level 5, none) unless the user set a level, before the steps
    // start (setenv must not race another thread's getenv) and before Kineto reads it.
    if (!cuda_ && traces_) ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
    if (run.progress().step + 1 == first_) start();
  }
  void on_step_end(RunControl& run, std::int64_t step) override {
    if (on_ && step >= last_) save(run);
    if (step + 1 == first_) start();
  }
  // A run that ends inside the window (max_steps, a stop) still writes what it traced.
  void on_fit_end(RunControl& run, FitResult&) override {
    if (on_) save(run);
    if (!started_ && traces_) say_why_no_trace(run);
  }
  // So does a run an error ended there: the trace of the steps that failed (a diverging one).
  void on_fit_failed(RunControl& run, const FitResult&) override {
    if (on_) save(run);
  }

 private:
  void start() {
    if (!traces_) return;
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda_) activities.insert(ActivityType::CUDA);
    const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true);
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    on_ = started_ = true;
  }
  // A window the run never reached would otherwise end it with no trace and no word.
  void say_why_no_trace(RunControl& run) const {
    const auto step = run.progress().step;
    if (step < first_)
      run.note("no profiler trace: the run ended at step " + std::to_string(step) + ", before train.profile.start_step " +
               std::to_string(first_) + " (lower it, or train longer)");
    else
      run.note("no profiler trace: train.profile.start_step " + std::to_string(first_) +
               " came before this resumed run's first step (an earlier run of this folder traced it, if it got there)");
  }
  void save(RunControl& run) {
    on_ = false;
    auto result = profiler::disableProfiler();
    const auto path = std::filesystem::path(dir_) / ("trace-step" + std::to_string(first_) + ".json");
    try {
      std::filesystem::create_directories(dir_);
      result->save(path.string());
      run.note("profiler trace of steps " + std::to_string(first_) + "-" + std::to_string(run.progress().step) + ": " + path.string() +
               " (open it in ui.perfetto.dev or chrome://tracing)");
    } catch (const std::exception& e) {  // the run goes on without its trace
      run.warn("the profiler trace could not be written to " + path.string() + ": " + e.what());
    }
  }

  std::int64_t first_, last_;
  std::string dir_;
  bool cuda_ = false, on_ = false, started_ = false, traces_ = false;
};

}  // namespace

std::unique_ptr<Callback> profiler_trace_callback(const Config& config) {
  if (config.train.profile_start_step <= 0) return nullptr;
  return std::make_unique<ProfilerTrace>(config);
}

}  // namespace gputrain::train

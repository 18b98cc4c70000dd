#include "gputrain/train/trainer.hpp"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/tensor_dataset.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/memory/oom_guard.hpp"
#include "gputrain/sizing/auto_workers.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "gputrain/train/run_setup.hpp"
#include "device_settings.hpp"
#include "human_lines.hpp"
#include "rank_group.hpp"
#include "step_failures.hpp"
#include "training_step.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void seed_everything(std::uint64_t seed, c10::Device device) {
  auto cpu = at::globalContext().defaultGenerator(at::kCPU);
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_current_seed(seed);
  }
  if (device.is_cuda()) {
    auto gpu = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gpu.mutex());
    gpu.set_current_seed(seed);
  }
}

// The best-checkpoint metric and whether larger is better.
std::optional<double> metric_value(const EpochMetrics& m, const std::string& name) {
  if (name == "val_loss") return m.val_loss;
  if (name == "val_accuracy") return m.val_accuracy;
  if (name == "val_mse") return m.val_mse;
  if (name == "val_mae") return m.val_mae;
  return std::nullopt;
}

memory::OomPolicy oom_policy(const OomConfig& c) { return {c.max_halvings, c.min_micro_batch, c.regrow_after}; }

dist::GradientSyncOptions sync_options(const DistributedConfig& c) {
  dist::GradientSyncOptions o;
  o.bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.bucket_mb * 1024 * 1024));
  o.first_bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.first_bucket_mb * 1024 * 1024));
  if (c.grad_dtype == "bf16") o.wire_dtype = at::kBFloat16;
  if (c.grad_dtype == "fp16") o.wire_dtype = at::kHalf;
  return o;
}

}  // namespace

// What fit() reports about the steps this process ran.
struct RunTotals {
  Clock::time_point start = Clock::now();
  double data_seconds = 0;
  double paused_seconds = 0;  // validation and checkpoint writing: no training step runs
  std::int64_t samples = 0, steps = 0;
};

struct Trainer::State {
  Config config;
  TrainerOptions options;
  RankGroup ranks;                        // world size 1 and no communicator in a plain run
  std::unique_ptr<dist::GradientSync> sync;
  std::int64_t agreed_micro_batch = 0;    // what the last step agreement settled on
  std::string config_yaml;
  c10::Device device{at::kCPU};
  RunData data;
  DataPlacement placement;
  std::int64_t train_size = 0, val_size = 0;
  std::size_t skipped_reported = 0;
  std::unique_ptr<Model> model;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<GradScaler> scaler;
  std::unique_ptr<CheckpointStore> store;
  std::unique_ptr<memory::OomGuard> train_guard, val_guard;
  std::vector<std::unique_ptr<MetricSink>> sinks;
  TrainingProgress progress;
  std::int64_t micro_batch = 0, effective_batch = 0, steps_per_epoch = 0, total_steps = 0, num_workers = 0;
  std::int64_t last_saved_step = -1;
  std::string last_checkpoint;
  std::vector<std::string> pending_notes;  // said before the sinks exist, shown once they do
  bool classification = true;
  bool channels_last = false;  // config.uses_channels_last(), resolved once

  CheckpointParts parts() { return CheckpointParts{*model, *optimizer, *scaler, device}; }
  StepParts step_parts() {
    return StepParts{*model, *optimizer, *scaler, params, data.transform, config.train, channels_last, classification, device, 0, sync.get()};
  }
  void note(const std::string& line) {
    for (auto& s : sinks) s->on_note(line);
  }
  void report_oom_events(memory::OomGuard& guard) {
    for (const auto& event : guard.take_events())
      for (auto& s : sinks) s->on_oom(event);
  }
  std::int64_t oom_events() const { return train_guard->oom_count() + val_guard->oom_count(); }
  void setup();
  void place_the_data(const std::string& device_name);
  void report_skipped();
  void resolve_workers();
  void make_sinks(std::int64_t start_step);
  void resume();
  at::Tensor train_step(const data::Batch* batch, std::int64_t global_rows);
  EpochMetrics validate(std::int64_t epoch, double train_loss, double seconds);
  void run_epochs(FitResult& result, RunTotals& totals);
  void checkpoint();
};

void Trainer::State::setup() {
  Config rank_config = config;  // the device is this rank's; config itself stays what every rank saves
  rank_config.device.name = ranks.device_name(config.device.name);
  auto run_device = prepare_device(rank_config);
  device = run_device.device;
  pending_notes = run_device.notes;
  ranks.connect(config.distributed, device);
  apply_backend_settings(config.train);
  classification = config.data.task == "classification";
  data = open_data(config);
  train_size = data.sources.train->size();
  val_size = data.sources.val ? data.sources.val->size() : 0;
  if (ranks.writer()) {  // before any step: a run must not train for an hour, then fail to save it
    for (const auto& [key, dir] : {std::pair<std::string, std::string>{"logging.dir", config.logging.dir},
                                   {config.checkpoint.dir.empty() ? "logging.dir" : "checkpoint.dir", config.checkpoint_dir()}}) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec)
        throw UsageError(key + ": '" + dir + "' cannot be created: " + ec.message(),
                         "set " + key + " to a folder this user can write (it is created when missing)");
    }
  }
  resolve_workers();
  place_the_data(run_device.name);
  // Seeded right before the model is built, so a run with `batch_size: auto` starts from the same
  // weights as one with the found size written in the config.
  seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
  model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
  if (!config.model.init_weights.empty()) load_named_state(*model, data::read_safetensors(config.model.init_weights));
  model->to(device);
  channels_last = config.uses_channels_last();
  if (channels_last) {
    use_channels_last(*model);
    if (!config.train.channels_last) pending_notes.push_back("train.channels_last auto: on (NHWC for " + config.model.name + "'s convolutions)");
  }
  params = model->parameters();
  if (auto* comm = ranks.communicator()) {
    std::vector<at::Tensor> state;
    for (auto& [name, tensor] : model->named_state()) state.push_back(tensor);
    dist::broadcast_from_rank0(*comm, state, {});
    sync = std::make_unique<dist::GradientSync>(params, *comm, sync_options(config.distributed));
    pending_notes.push_back("distributed: " + ranks.summary() + ", gradients in " + std::to_string(sync->figures().buckets) +
                            " bucket(s) of up to " + core::format_fixed(config.distributed.bucket_mb, 0) + " MiB" +
                            (config.distributed.grad_dtype == "none" ? "" : ", sent as " + config.distributed.grad_dtype));
  }
  optimizer = make_optimizer(config.optimizer, params);
  scaler = std::make_unique<GradScaler>(config.train.precision == Precision::fp16_mixed, device);
  train_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "train");
  val_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "validation");
  // Every rank issues the same collectives only if every rank splits its step alike.
  if (ranks.distributed()) train_guard->set_agreement([this](std::int64_t) { return agreed_micro_batch; });

  // Each rank takes every world-th sample; the largest shard sets the steps (a rank whose shard
  // is through joins the last step with no samples, so every rank steps alike).
  const std::int64_t world = ranks.world_size();
  const std::int64_t shard = config.data.drop_last ? train_size / world : (train_size + world - 1) / world;
  steps_per_epoch = config.data.drop_last ? shard / effective_batch : (shard + effective_batch - 1) / effective_batch;
  if (steps_per_epoch == 0)
    throw UsageError("data.drop_last with " + std::to_string(train_size) + " training samples and an effective batch of " +
                         std::to_string(effective_batch) + " leaves no step",
                     "lower train.batch_size or train.grad_accum, or set data.drop_last: false");
  total_steps = steps_per_epoch * config.train.epochs;
  if (config.train.max_steps > 0) total_steps = std::min(total_steps, config.train.max_steps);

  store = std::make_unique<CheckpointStore>(config.checkpoint_dir(), config.checkpoint.keep_last);
  if (ranks.writer()) core::write_file_atomically((fs::path(config.logging.dir) / "config.yaml").string(), config_yaml);
}

// The micro-batch (found by probes when `auto`) and where the data lives. They depend on each
// other: a dataset held in GPU memory leaves less for the batch, and whether it fits depends on
// a step's memory. The cache is decided with the step at the configured batch (or a small one
// for `auto`), then the search sizes the batch in what the cache leaves.
void Trainer::State::place_the_data(const std::string& device_name) {
  data::CachePlan plan;
  {
    const bool auto_batch = !config.train.batch_size;
    // On the CPU, array data already is in memory and the plan needs no step figure.
    const bool step_matters = config.data.cache != "none" && (device.is_cuda() || !data.sources.train->tensors());
    const auto samples = auto_batch || step_matters ? probe_samples(data, device) : data::TensorDataset{};
    std::uint64_t step_bytes = 0;
    ProbeData probe{samples, data.transform, train_size};
    if (step_matters) {
      seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
      step_bytes = measure_step_memory(config, device, probe, config.train.batch_size.value_or(std::min<std::int64_t>(16, train_size)));
    }
    plan = plan_data_cache(config, data, device, step_bytes);
    if (!auto_batch) {
      micro_batch = *config.train.batch_size;
    } else {
      if (plan.mode == data::CacheMode::vram && device.is_cuda()) probe.reserve_bytes = dataset_bytes(data);
      seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
      const auto cache = ranks.writer() ? (fs::path(config.logging.dir) / "auto_batch.json").string() : std::string();
      const auto choice = find_batch_size(config, device, device_name, probe, cache);
      // Each rank measured its own GPU; all take the smallest, so every rank's steps fit.
      micro_batch = ranks.min(choice.batch, "the agreement on batch_size: auto");
      pending_notes.push_back(
          choice.remembered
              ? "batch_size auto: " + std::to_string(micro_batch) + ", remembered in " + choice.cache_path + " (" + choice.search.reason + ")"
              : "batch_size auto: " + std::to_string(micro_batch) + " after " + std::to_string(choice.search.probes.size()) +
                    " probe steps in " + core::format_fixed(choice.seconds, 1) + " s: " + choice.search.reason);
    }
  }
  memory::release_cached_memory(device);
  effective_batch = micro_batch * config.train.grad_accum;
  placement = place_data(config, data, device, plan, effective_batch, micro_batch, static_cast<int>(num_workers));
  // A cache leaves unreadable samples out, so its size is what the sampler draws from.
  if (placement.train_cache) train_size = placement.train_cache->data().size();
  if (placement.val_cache) val_size = placement.val_cache->data().size();
  pending_notes.push_back("data: " + data.sources.train->description() + (data.sources.val ? "; validation: " + data.sources.val->description() : ""));
  pending_notes.push_back("data.cache " + config.data.cache + " -> " + data::to_string(placement.plan.mode) + ": " + placement.summary +
                          " (" + placement.plan.reason + ")");
}

void Trainer::State::report_skipped() {
  auto skipped = placement.skipped;
  for (auto* feed : {placement.train_feed.get(), placement.val_feed.get()})
    if (feed)
      for (auto& line : feed->skipped()) skipped.push_back(line);
  if (skipped.size() <= skipped_reported) return;
  note(std::to_string(skipped.size() - skipped_reported) + " unreadable sample" + (skipped.size() - skipped_reported == 1 ? "" : "s") +
       " skipped, e.g. " + skipped[skipped_reported] + " (" + std::to_string(skipped.size()) + " in all)");
  skipped_reported = skipped.size();
}

void Trainer::State::resolve_workers() {
  if (config.data.num_workers) {
    num_workers = *config.data.num_workers;
    return;
  }
  const auto system = device::collect_system_info();
  const int gpus = device.is_cuda() ? static_cast<int>(torch::cuda::device_count()) : 0;
  const auto plan = sizing::auto_num_workers(system.usable_cores, gpus, ranks.local_world_size());
  num_workers = plan.workers;
  pending_notes.push_back("data.num_workers auto: " + std::to_string(plan.workers) + " (" + plan.reason + ")");
}

void Trainer::State::make_sinks(std::int64_t start_step) {
  if (!ranks.writer()) {  // rank 0 speaks for the run
    pending_notes.clear();
    return;
  }
  const fs::path dir(config.logging.dir);
  std::ostream& console = options.console ? *options.console : std::cerr;
  std::string mode = config.logging.progress;
  if (mode == "auto") mode = options.console_is_terminal ? "bar" : "lines";
  sinks.push_back(make_console_sink(mode, console));
  sinks.push_back(make_log_file_sink((dir / "training.log").string()));
  if (config.logging.jsonl) sinks.push_back(make_jsonl_sink((dir / "metrics.jsonl").string()));
  if (config.logging.tensorboard) sinks.push_back(make_tensorboard_sink(dir.string()));
  RunInfo info;
  info.run_dir = config.logging.dir;
  info.model = model->name();
  info.device = device.str();
  info.precision = to_string(config.train.precision);
  info.parameters = parameter_count(*model);
  info.total_steps = total_steps;
  info.steps_per_epoch = steps_per_epoch;
  info.epochs = config.train.epochs;
  info.batch_size = micro_batch;
  info.grad_accum = config.train.grad_accum;
  info.batch_size_auto = !config.train.batch_size.has_value();
  info.num_workers = num_workers;
  info.data_cache = data::to_string(placement.plan.mode);
  info.train_samples = train_size;
  info.val_samples = val_size;
  info.data_load_seconds = placement.load_seconds;
  info.start_step = start_step;
  info.world_size = ranks.world_size();
  info.distributed = ranks.summary();
  for (auto& s : sinks) s->on_start(info);
  for (const auto& line : pending_notes) note(line);
  pending_notes.clear();
}

void Trainer::State::resume() {
  std::string path;
  if (config.checkpoint.resume == "auto") {
    if (auto latest = store->latest()) path = *latest;
  } else if (config.checkpoint.resume != "never") {
    path = config.checkpoint.resume;
  }
  if (path.empty()) return;
  std::string saved_config;
  progress = load_checkpoint(path, parts(), &saved_config);
  last_saved_step = progress.step;
  last_checkpoint = path;
  if (saved_config != config_yaml)
    note("note: the config differs from the one " + path + " was written with (both are kept: config.yaml and the checkpoint)");
}

// One optimizer step over `batch` (this rank's share of `global_rows` samples; nullptr when the
// rank has none left this epoch). The OOM guard may split it into smaller micro-batches; the loss
// weighting in accumulate_gradients keeps the gradient that of the whole (global) batch.
at::Tensor Trainer::State::train_step(const data::Batch* batch, std::int64_t global_rows) {
  auto p = step_parts();
  p.global_rows = global_rows;
  at::Tensor step_loss;
  if (sync) sync->begin_step(progress.step);
  if (batch)
    train_guard->run(
        progress.step, batch->size(), [&](std::int64_t micro) { step_loss = accumulate_gradients(p, *batch, micro); },
        [&] {
          optimizer->zero_grad(/*set_to_none=*/true);
          if (sync) sync->discard();
        });
  report_oom_events(*train_guard);
  if (sync) sync->finish();
  try {
    apply_gradients(p);
  } catch (const c10::OutOfMemoryError& e) {
    // Past the micro-batches nothing scales with the batch: parameters, gradients and optimizer
    // state alone do not fit, and the parameters may be half-updated, so no checkpoint is written.
    throw Error("out of memory in the optimizer step (step " + std::to_string(progress.step + 1) +
                    "): the parameters, gradients and optimizer state alone do not fit; " +
                    memory::describe(memory::memory_figures(device)) + ". The allocator said: " + e.what_without_backtrace(),
                "use optimizer.name: sgd (less state than adam/adamw), a smaller model, or allow more memory (device.max_memory); "
                "the last periodic checkpoint is intact");
  }
  return step_loss.defined() ? step_loss : at::zeros({}, at::TensorOptions().device(device));  // a rank with no samples
}

EpochMetrics Trainer::State::validate(std::int64_t epoch, double train_loss, double seconds) {
  EpochMetrics m;
  m.epoch = epoch;
  m.step = progress.step;
  m.train_loss = train_loss;
  m.seconds = seconds;
  if (!placement.val_feed) return m;
  model->set_training(false);
  at::NoGradGuard no_grad;
  const auto f64 = at::TensorOptions().device(device).dtype(at::kDouble);
  at::Tensor loss_sum = at::zeros({}, f64), correct = at::zeros({}, f64), se = at::zeros({}, f64), ae = at::zeros({}, f64);
  std::int64_t n = 0;
  // Each rank validates every world-th sample; the sums are added up over ranks below.
  placement.val_feed->start(at::arange(ranks.rank(), val_size, ranks.world_size(), at::kLong), val_guard->preferred_micro_batch());
  while (auto fed = placement.val_feed->next()) {
    const data::Batch& chunk = fed->batch;
    const std::int64_t rows = chunk.size();
    n += rows;
    at::Tensor chunk_loss, chunk_correct, chunk_se, chunk_ae;
    // An OOM here shrinks the validation batch only; the chunk is summed again from scratch.
    val_guard->run(
        progress.step, rows,
        [&](std::int64_t micro) {
          chunk_loss = at::zeros({}, f64), chunk_correct = at::zeros({}, f64), chunk_se = at::zeros({}, f64),
          chunk_ae = at::zeros({}, f64);
          for (std::int64_t start = 0; start < rows; start += micro) {
            const std::int64_t end = std::min(rows, start + micro);
            const auto inputs = model_input(data.transform, channels_last, chunk.inputs.slice(0, start, end), /*training=*/false);
            const auto targets = chunk.targets.slice(0, start, end);
            at::Tensor output;
            {
              AutocastScope autocast(device.type(), config.train.precision);
              output = model->forward(inputs);
            }
            output = output.to(at::kFloat);
            chunk_loss += loss_of(classification, output, targets).to(at::kDouble) * static_cast<double>(end - start);
            if (classification) {
              chunk_correct += output.argmax(1).eq(targets).sum().to(at::kDouble);
            } else {
              const auto diff = (output - targets).to(at::kDouble);
              chunk_se += diff.pow(2).sum();
              chunk_ae += diff.abs().sum();
            }
          }
        },
        [] {});
    report_oom_events(*val_guard);
    loss_sum += chunk_loss;
    correct += chunk_correct;
    se += chunk_se;
    ae += chunk_ae;
  }
  model->set_training(true);
  const auto sums = ranks.sum({loss_sum.item<double>(), correct.item<double>(), se.item<double>(), ae.item<double>(), static_cast<double>(n)},
                              "the sum of the validation figures after epoch " + std::to_string(epoch + 1));
  const double count = sums[4];
  if (count == 0) return m;
  m.val_loss = sums[0] / count;
  if (classification) {
    m.val_accuracy = sums[1] / count;
  } else {
    const double values = count * static_cast<double>(model_outputs(config));
    m.val_mse = sums[2] / values;
    m.val_mae = sums[3] / values;
  }
  return m;
}

void Trainer::State::checkpoint() {
  if (progress.step == last_saved_step) return;
  if (!ranks.writer()) {  // every rank holds the same state; rank 0's file serves all on resume
    last_saved_step = progress.step;
    return;
  }
  last_checkpoint = store->save(parts(), progress, config_yaml);
  last_saved_step = progress.step;
  note("checkpoint written: " + last_checkpoint);
}

Trainer::Trainer(Config config, TrainerOptions options) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->options = std::move(options);
  state_->config_yaml = to_yaml(state_->config);
  try {
    state_->setup();
    state_->resume();
  } catch (const c10::OutOfMemoryError& e) {
    throw Error("out of memory before the first step, while placing the data, the model and its optimizer on " +
                    state_->device.str() + ": " + memory::describe(memory::memory_figures(state_->device)) +
                    ". The allocator said: " + e.what_without_backtrace(),
                "allow more memory (device.max_memory), use fewer samples (data.samples) or a smaller model");
  }
}

Trainer::~Trainer() = default;

Model& Trainer::model() { return *state_->model; }

std::string Trainer::device() const { return state_->device.str(); }

// The epochs and steps of a run, until the step budget or a stop request; fit() handles the end.
void Trainer::State::run_epochs(FitResult& result, RunTotals& totals) {
  const data::EpochSampler sampler(train_size, config.data.shuffle, static_cast<std::uint64_t>(config.train.seed), ranks.rank(),
                                   ranks.world_size(), config.data.drop_last);
  const bool distributed = ranks.distributed();
  const std::int64_t log_every = config.logging.every_steps;
  model->set_training(true);

  auto window_start = Clock::now();
  double window_data = 0, window_paused = 0;
  // Validation and checkpoints are timed apart, so samples/s and the data stall describe the
  // training steps alone (a long validation would otherwise dilute the stall it is meant to show).
  const auto paused = [&](const auto& work) {
    const auto start = Clock::now();
    work();
    const double seconds = seconds_since(start);
    totals.paused_seconds += seconds;
    window_paused += seconds;
  };
  std::int64_t window_steps = 0, window_samples = 0;
  at::Tensor window_loss = at::zeros({}, at::TensorOptions().device(device));
  std::int64_t window_skipped_before = scaler->skipped_steps();
  // A run whose loss turned nan/inf changes nothing for the better: stop before it writes a
  // checkpoint of broken weights over good ones. With fp16's GradScaler a non-finite loss is
  // harmless as long as some steps still update (the scaler skips the others); when every step
  // of the window was skipped, nothing is learning any more either.
  const auto stop_if_diverged = [&](double mean_loss) {
    if (std::isfinite(mean_loss)) return;
    const bool all_skipped = scaler->skipped_steps() - window_skipped_before >= window_steps;
    if (scaler->enabled() && !all_skipped) return;
    throw divergence_error({mean_loss, progress.step - window_steps + 1, progress.step, scaler->enabled(), last_checkpoint}, config);
  };
  // Before a checkpoint between two reports: the steps since the last report must be sound too.
  const auto check_window = [&] {
    if (window_steps == 0) return;
    stop_if_diverged(ranks.sum({window_loss.item<double>()}, "the sum of the loss before a checkpoint at step " +
                                                                 std::to_string(progress.step))[0] /
                     static_cast<double>(window_steps));
  };

  while (progress.step < total_steps && !result.interrupted) {
    const auto epoch_start = Clock::now();
    auto order = sampler.order(progress.epoch);
    if (config.data.drop_last) order = order.slice(0, 0, order.size(0) / effective_batch * effective_batch);
    at::Tensor epoch_loss = at::zeros({}, at::TensorOptions().device(device));
    std::int64_t epoch_steps = 0;
    const std::int64_t n = order.size(0);
    // A resumed epoch starts at the saved position, so it sees exactly the samples it had left.
    placement.train_feed->start(order.slice(0, std::min(progress.position, n)), effective_batch);
    // A rank whose shard is through keeps joining the steps (with no samples) until all are.
    while ((progress.position < n || distributed) && progress.step < total_steps) {
      const auto data_start = Clock::now();
      auto fed = progress.position < n ? placement.train_feed->next() : std::nullopt;
      const double data_seconds = seconds_since(data_start);
      if (!fed) progress.position = n;  // through, or only unreadable samples were left
      const std::int64_t rows = fed ? fed->batch.size() : 0;
      std::int64_t global_rows = rows;
      if (distributed) {
        const auto agreed = ranks.agree(train_guard->micro_batch(), core::stop_requested(), rows, progress.step);
        if (agreed.stop) {
          result.interrupted = true;
          break;
        }
        if (agreed.rows == 0) break;  // the epoch is over on every rank
        agreed_micro_batch = agreed.micro_batch;
        global_rows = agreed.rows;
      } else if (!fed) {
        break;
      }
      // The schedule is a function of the step alone, so a resumed run picks it up exactly.
      const double lr = learning_rate_at(config.scheduler, config.optimizer.lr, progress.step, total_steps);
      set_learning_rate(*optimizer, lr);
      if (fed && options.on_batch) options.on_batch(fed->batch);
      const auto loss = train_step(fed ? &fed->batch : nullptr, global_rows);
      if (fed) progress.position += fed->covered;
      ++progress.step;
      ++epoch_steps;
      ++window_steps;
      ++totals.steps;
      window_samples += rows;
      totals.samples += rows;
      window_data += data_seconds;
      totals.data_seconds += data_seconds;
      window_loss += loss;
      epoch_loss += loss;
      // With several ranks, each loss is this rank's share of the global batch's mean: summed over ranks.
      if (!result.first_loss) result.first_loss = ranks.sum({loss.item<double>()}, "the sum of the first step's loss")[0];

      if (progress.step % log_every == 0 || progress.step == total_steps) {
        StepMetrics m;
        m.step = progress.step;
        m.epoch = progress.epoch;
        const auto window = ranks.sum({window_loss.item<double>(), static_cast<double>(window_samples)},  // syncs the device
                                      "the sum of the logged loss at step " + std::to_string(progress.step));
        m.loss = window[0] / static_cast<double>(window_steps);
        stop_if_diverged(m.loss);
        const double window_seconds = seconds_since(window_start) - window_paused;
        m.samples_per_second = window[1] / window_seconds;
        m.data_seconds = window_data / static_cast<double>(window_steps);
        m.compute_seconds = (window_seconds - window_data) / static_cast<double>(window_steps);
        m.lr = lr;
        m.loss_scale = scaler->scale_value();
        m.skipped_steps = scaler->skipped_steps();
        // The ETA keeps the pauses: the validations and checkpoints still ahead take time too.
        m.eta_seconds = static_cast<double>(total_steps - progress.step) * (window_seconds + window_paused) /
                        static_cast<double>(window_steps);
        const auto memory = memory::memory_figures(device, /*with_limit=*/false);  // no /proc or driver call per report
        m.memory_allocated = memory.allocated;
        m.memory_reserved = memory.reserved;
        m.memory_peak = memory.peak;
        m.micro_batch = train_guard->micro_batch();
        m.oom_events = oom_events();
        for (auto& sink : sinks) sink->on_step(m);
        result.last_loss = m.loss;
        window_loss.zero_();
        window_steps = window_samples = 0;
        window_skipped_before = scaler->skipped_steps();
        window_data = window_paused = 0;
        window_start = Clock::now();
      }
      if (config.checkpoint.every_steps > 0 && progress.step % config.checkpoint.every_steps == 0) {
        check_window();
        paused([&] { checkpoint(); });
      }
      if (options.after_step) options.after_step(progress.step);
      if (!distributed && core::stop_requested()) {  // ranks stop together, at the next agreement
        result.interrupted = true;
        break;
      }
    }
    report_skipped();
    if (progress.position >= n) {
      const double epoch_loss_sum = ranks.sum({epoch_loss.item<double>()}, "the sum of epoch " + std::to_string(progress.epoch + 1) + "'s loss")[0];
      const double train_loss = epoch_steps > 0 ? epoch_loss_sum / static_cast<double>(epoch_steps) : 0.0;
      EpochMetrics metrics;
      const double epoch_seconds = seconds_since(epoch_start);
      paused([&] { metrics = validate(progress.epoch, train_loss, epoch_seconds); });
      for (auto& sink : sinks) sink->on_epoch(metrics);
      result.last_epoch = metrics;
      ++progress.epoch;
      progress.position = 0;
      const auto value = metric_value(metrics, config.checkpoint.best_metric);
      const bool maximize = config.checkpoint.best_mode == "max" ||
                            (config.checkpoint.best_mode == "auto" && config.checkpoint.best_metric == "val_accuracy");
      if (value && (!progress.best_metric || (maximize ? *value > *progress.best_metric : *value < *progress.best_metric))) {
        progress.best_metric = *value;
        if (ranks.writer())
          paused([&] {
            note("best " + config.checkpoint.best_metric + " so far: " + std::to_string(*value) + " -> " +
                 store->save_best(parts(), progress, config_yaml));
          });
      }
      if (config.checkpoint.every_epochs > 0 && progress.epoch % config.checkpoint.every_epochs == 0) {
        check_window();
        paused([&] { checkpoint(); });
      }
    }
  }
}

FitResult Trainer::fit() {
  auto& s = *state_;
  auto& progress = s.progress;
  FitResult result;
  result.run_dir = s.config.logging.dir;
  result.total_steps = s.total_steps;
  result.start_step = progress.step;
  s.make_sinks(progress.step);
  if (progress.step > 0) s.note("resumed from " + s.last_checkpoint + " at step " + std::to_string(progress.step));
  if (progress.step > 0 && progress.step >= s.total_steps)
    s.note("nothing left to train: this run already finished its " + std::to_string(s.total_steps) +
           " steps; to train again set checkpoint.resume: never or another logging.dir, to train longer raise "
           "train.epochs or train.max_steps");

  RunTotals totals;
  try {
    s.run_epochs(result, totals);
  } catch (const memory::OomExhaustedError&) {
    // The failed step changed nothing (its partial gradients were dropped): save where the run
    // stands, so it resumes here once the memory settings are changed.
    s.report_oom_events(*s.train_guard);
    s.report_oom_events(*s.val_guard);
    s.checkpoint();
    s.note("stopped: out of memory with no smaller micro-batch allowed; resume from " + s.last_checkpoint +
           " after changing the memory settings");
    for (auto& sink : s.sinks) sink->on_end();
    throw;
  } catch (const c10::Error& e) {
    // LibTorch's own errors carry a C++ backtrace users cannot act on: keep its message, say
    // which step failed and, where the cause is known, what to change.
    for (auto& sink : s.sinks) sink->on_end();
    throw Error("step " + std::to_string(progress.step + 1) + " failed in LibTorch: " + e.what_without_backtrace(),
                remedy_for_step_failure(e.what_without_backtrace(), s.train_size, s.effective_batch));
  } catch (...) {
    for (auto& sink : s.sinks) sink->on_end();
    throw;
  }
  s.report_skipped();
  s.checkpoint();  // the state the run ends in, whether finished or stopped
  result.last_checkpoint = s.last_checkpoint;
  result.steps = progress.step;
  result.skipped_steps = s.scaler->skipped_steps();
  result.samples = totals.samples;
  result.oom_events = s.oom_events();
  result.batch_size = s.micro_batch;
  result.micro_batch = s.train_guard->micro_batch();
  result.data_cache = data::to_string(s.placement.plan.mode);
  result.data_load_seconds = s.placement.load_seconds;
  const auto& layout = s.data.sources.train->layout();
  result.sample_bytes = layout.input_bytes() + layout.target_bytes();
  result.skipped_samples = static_cast<std::int64_t>(s.skipped_reported);
  result.run_seconds = seconds_since(totals.start);
  const double step_seconds = result.run_seconds - totals.paused_seconds;
  result.world_size = s.ranks.world_size();
  result.rank = s.ranks.rank();
  if (s.sync) {
    const auto figures = s.sync->figures();
    result.gradient_buckets = figures.buckets;
    result.buckets_sent_in_backward = figures.launched_in_backward;
    result.gradient_wait_seconds = figures.wait_seconds;
    result.communication_seconds = figures.communication_seconds;
  }
  const double all_samples = s.ranks.sum({static_cast<double>(totals.samples)}, "the sum of the samples trained on")[0];
  if (totals.steps > 0) {
    result.samples_per_second = all_samples / step_seconds;
    result.data_stall_percent = 100.0 * totals.data_seconds / step_seconds;
    result.step_seconds = step_seconds;
    result.data_seconds = totals.data_seconds;
  }
  if (s.ranks.writer()) {
    const auto advice = data_stall_advice(result.data_stall_percent, totals.steps, result.data_cache);
    if (!advice.empty()) s.note(advice);
  }
  if (result.interrupted) {
    for (auto& sink : s.sinks) sink->on_outcome("interrupted after step " + std::to_string(progress.step) + "; checkpoint " + result.last_checkpoint);
  } else if (s.ranks.writer()) {
    result.weights_path = (fs::path(s.config.logging.dir) / "model.safetensors").string();
    data::write_safetensors(result.weights_path, s.model->named_state(), {{"format", "pt"}, {"model", s.model->name()}});
    for (auto& sink : s.sinks) sink->on_outcome("final weights: " + result.weights_path);
  }
  for (auto& sink : s.sinks) sink->on_end();
  return result;
}

}  // namespace gputrain::train

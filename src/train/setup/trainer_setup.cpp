// Trainer's set-up: the device, the data and where it lives, the model, optimizer and scaler, the
// metric sinks, and resuming from a checkpoint; all before the first step.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "activation_checkpointing_setup.hpp"
#include "device_settings.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/sizing/auto_workers.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "init_weights.hpp"
#include "optimizer_sharding_setup.hpp"
#include "run_folder_checks.hpp"
#include "sync_batch_norm_setup.hpp"
#include "train/checkpoint/checkpoint_space.hpp"
#include "train/config/unread_settings.hpp"
#include "train/data_checks/rank_data.hpp"
#include "train/loop/callbacks/early_stop.hpp"
#include "train/loop/callbacks/plateau.hpp"
#include "train/loop/trainer_state.hpp"
#include "train/models/builtin_models.hpp"
#include "train/models/frozen_model.hpp"
#include "train/models/layers/layer_switches.hpp"
#include "train/report/human_lines.hpp"
#include "train/step/graph_plan.hpp"

namespace gputrain::train {
namespace {

namespace fs = std::filesystem;

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

// The batches of an evaluation whose config says `batch_size: auto`: without gradients or
// optimizer state a batch this size fits wherever training fitted; an out-of-memory error halves it.
constexpr std::int64_t kEvaluationBatch = 256;

memory::OomPolicy oom_policy(const OomConfig& c) { return {c.max_halvings, c.min_micro_batch, c.regrow_after}; }

// A batch of no samples, shaped and typed as the data's, on `device`.
data::Batch empty_batch(const data::SampleLayout& layout, c10::Device device) {
  auto no_rows = [&](std::vector<std::int64_t> shape, at::ScalarType dtype) {
    shape.insert(shape.begin(), 0);
    return at::empty(shape, at::TensorOptions().dtype(dtype).device(device));
  };
  return {no_rows(layout.input_shape, layout.input_dtype), no_rows(layout.target_shape, layout.target_dtype)};
}

dist::GradientSyncOptions sync_options(const DistributedConfig& c) {
  dist::GradientSyncOptions o;
  o.bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.bucket_mb * 1024 * 1024));
  o.first_bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.first_bucket_mb * 1024 * 1024));
  if (c.grad_dtype == "bf16") o.wire_dtype = at::kBFloat16;
  if (c.grad_dtype == "fp16") o.wire_dtype = at::kHalf;
  return o;
}

// A config with text that is not UTF-8 (a path typed on a Latin-1 system): the paths are used as
// typed, and the records, which hold UTF-8, read it another way; said once, before training.
std::string config_not_utf8_note(const std::string& config_yaml) {
  const auto at = core::first_invalid_utf8(config_yaml);
  if (!at) return "";
  const auto begin = config_yaml.rfind('\n', *at) + 1;  // npos + 1 is 0: the first line
  auto line = config_yaml.substr(begin, config_yaml.find('\n', *at) - begin);
  line.erase(0, line.find_first_not_of(' '));
  return "note: the config's '" + core::windows1252_to_utf8(line) +
         "' is not UTF-8: paths are used byte for byte and checkpoints keep it as Python's os.fsdecode reads it; "
         "model.safetensors' metadata, TensorBoard and MLflow read it as Windows-1252, and metrics.jsonl and report.json "
         "write U+FFFD for its other bytes";
}

}  // namespace

void Trainer::State::setup() {
  check_layer_switches();                                       // before anything is written
  if (!evaluating()) refuse_run_config_from_elsewhere(config);  // before the data opens, which may take minutes
  Config rank_config = config;                                  // the device is this rank's; config itself stays what every rank saves
  rank_config.device.name = ranks.device_name(config.device.name);
  auto run_device = prepare_device(rank_config);
  device = run_device.device;
  phase_done("device");
  if (device.is_cuda()) {
    // Made here rather than by the first allocation, so that what it costs is a phase of its own.
    torch::cuda::synchronize(device.index());
    phase_done("cuda_context");
  }
  for (const auto& line : run_device.notes) reporter.later(line);
  if (const auto note = config_not_utf8_note(config_yaml); !note.empty()) reporter.later(note);
  ranks.connect(config.distributed, device);
  apply_backend_settings(config.train);
  phase_done("ranks");
  open_the_data();
  phase_done("data");
  if (evaluating()) {
    prepare_to_evaluate(run_device.name);
    phase_done("model");
  } else {
    prepare_to_train(run_device.name);
  }
}

// Training: its folders, the batch found or given, the model from its initial weights, and
// what the steps and checkpoints need.
void Trainer::State::prepare_to_train(const std::string& device_name) {
  // What watches a validation figure needs one: the config check caught synthetic data already.
  const auto refuse_without_validation = [&](bool on, const std::string& who, const std::string& off) {
    if (on && val_size == 0)
      throw UsageError(who + " when its validation figure stops improving, but this run has no validation data",
                       "set data.val_path (a validation file in the training data's format) or data.val_fraction: 0.1 (hold out "
                       "a tenth of the training samples), or " +
                           off);
  };
  refuse_without_validation(config.train.early_stop_patience > 0,
                            "train.early_stop_patience: " + std::to_string(config.train.early_stop_patience) + " stops the run",
                            "train.early_stop_patience: 0");
  refuse_without_validation(config.scheduler.name == "plateau", "scheduler.name plateau lowers the learning rate",
                            "pick another scheduler.name");
  if (ranks.writer()) {  // before any step: a run must not train for an hour, then fail to save it
    make_run_folders();
    lock_folders();
  }
  phase_done("folders");
  resolve_workers();
  check_scripted_model(config, data, device);  // before the probes and the cache plan run it
  place_the_data(device_name);
  phase_done("cache");
  // Before the model's seeding: the check runs a copy of the model, which draws random numbers.
  if (!config.data.drop_last && !(config.model.sync_batch_norm && ranks.world_size() > 1))
    lone_samples = plan_lone_samples(config, data, {train_size, ranks.world_size(), effective_batch, micro_batch});
  make_the_model();
  // Training's settings, not worth a note before an evaluation, whose weights come from its file.
  for (const auto& line : unread_settings(config)) reporter.later("note: " + line);
  if (const auto line = plateau_patience_note(config); !line.empty()) reporter.later("note: " + line);
  if (const auto line = best_mode_note(config.checkpoint); !line.empty() && val_size > 0) reporter.later("note: " + line);
  if (!config.model.init_weights.empty())
    for (const auto& line : load_init_weights(*model, config, model_outputs(config))) reporter.later("note: " + line);
  if (!config.train.activation_checkpointing.empty())  // before freezing, which hides the blocks behind its wrapper
    reporter.later(recompute_blocks(*model, config.train.activation_checkpointing));
  if (config.model.sync_batch_norm) {  // before freezing, which hides the layers behind its wrapper
    auto sync_setup = synchronise_batch_norm(*model, ranks.communicator());
    norm_sync = sync_setup.sync;
    reporter.later((norm_sync ? "" : "note: ") + sync_setup.line);
  }
  if (!config.train.freeze.empty()) {
    std::string line;
    model = freeze_parameters(std::move(model), config.train.freeze, line);
    reporter.later("note: " + line);
  }
  phase_done("model");
  place_the_model();
  share_the_weights();
  phase_done("model_to_device");
  if (auto* comm = ranks.communicator()) {
    sync = std::make_unique<dist::GradientSync>(params, *comm, sync_options(config.distributed));
    reporter.later("distributed: " + ranks.summary() + ", gradients in " + core::counted(sync->figures().buckets, "bucket") + " of up to " +
                   c10::str(config.distributed.bucket_mb) + " MiB" +
                   (config.distributed.grad_dtype == "none" ? "" : ", sent as " + config.distributed.grad_dtype));
  }
  if (config.model.torchscript.empty() && config.model.name == "transformer")
    reporter.later(models::transformer_attention_note(ModelSpec{config.model, config.data.shape, model_outputs(config)}, device,
                                                      config.train.precision));
  make_the_step();
  phase_done("step");
  count_the_steps();
  for (const auto& line : schedule_notes(config.optimizer, config.scheduler, total_steps)) reporter.later(line);
  store = std::make_unique<CheckpointStore>(config.checkpoint_dir(), config.checkpoint.keep_last);
  if (ranks.writer()) check_disk_space();
}

// An evaluation (--evaluate): one pass over the validation data, nothing written.
void Trainer::State::prepare_to_evaluate(const std::string& device_name) {
  if (val_size == 0)
    throw UsageError("--evaluate measures the weights on the config's validation data, and it has none",
                     config.data.source == "synthetic"
                         ? "set data.val_samples above 0"
                         : "set data.val_path to the labelled data to evaluate on (in the training data's format; keep data.path "
                           "as it was trained, since data.standardize and the class names are read from it), or data.val_fraction "
                           "as the run had it");
  resolve_workers();
  check_scripted_model(config, data, device, /*training=*/false);
  // One pass over the validation data: loading the training set into a cache first would cost
  // more than streaming what is evaluated.
  config.data.cache = "none";
  place_the_data(device_name);
  make_the_model();
  place_the_model();
  share_the_weights();
  make_the_step();
}

// Optimizer, loss scaler and the step engine over them, and the out-of-memory guards.
void Trainer::State::make_the_step() {
  NamedTensors trained;  // the parameters that train, by name: optimizer.param_groups picks them by name
  for (const auto& named : model->named_state()) {
    const auto& tensor = named.second;  // a plain reference: C++17 lambdas cannot capture a structured binding
    if (std::any_of(params.begin(), params.end(), [&](const at::Tensor& p) { return p.is_same(tensor); }))
      trained.emplace_back(named.first, tensor);
  }
  optimizer = make_optimizer(config.optimizer, trained, group_lrs);
  if (config.distributed.shard_optimizer && !evaluating()) {
    auto sharding = shard_optimizer_state(*optimizer, ranks.communicator(), sync_options(config.distributed).bucket_bytes);
    shards = std::move(sharding.shards);
    reporter.later((shards ? "" : "note: ") + sharding.line);
  }
  scaler = std::make_unique<GradScaler>(config.train.precision == Precision::fp16_mixed, device);
  if (norm_sync) no_rows = empty_batch(data.sources.train->layout(), device);
  engine = std::make_unique<StepEngine>(StepParts{*model, *optimizer, *scaler, params, data.transform, config.train, channels_last,
                                                  classification, device, sync.get(), class_weights, &readout, norm_sync.get(), &no_rows,
                                                  shards.get()});
  readout.norms = config.logging.grad_norm;
  train_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "train");
  val_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "validation");
  // Every rank issues the same collectives only if every rank splits its step alike.
  if (ranks.distributed()) train_guard->set_agreement([this](std::int64_t) { return agreed_micro_batch; });
}

void Trainer::State::choose_step_backend() {
  GraphConditions conditions;
  conditions.setting = config.train.cuda_graphs;
  conditions.cuda = device.is_cuda();
  if (sync) conditions.gradient_sync = dist::to_string(ranks.communicator()->backend());
  conditions.sharded_optimizer = shards != nullptr;
  for (const auto& callback : callbacks)
    if (conditions.eager_callback.empty() && callback->needs_eager_steps()) conditions.eager_callback = callback->name();
  conditions.device_stepped = device_stepped(*optimizer) != nullptr;
  conditions.recomputes_random = recomputation_draws_random_numbers(*model);
  const auto decision = decide_cuda_graphs(conditions);
  cuda_graphs = decision.summary();
  // On a CPU the eager step is the only one: said in metrics.jsonl, not on the console.
  if (device.is_cuda() || config.train.cuda_graphs != "auto") reporter.later("cuda graphs: " + cuda_graphs);
  if (decision.capture) {
    ranks.graphs_hold_collectives();
    engine->use(make_graph_backend(config.train.cuda_graphs == "on", [this](const std::string& line) { reporter.note(line); }));
  }
}

// The data, its sizes, and the class weights on the device.
void Trainer::State::open_the_data() {
  classification = config.data.task == "classification";
  data = open_data(config, evaluating());
  refuse_ranks_reading_different_data(ranks, data.sources, config.data.source);
  if (data.class_weights.defined()) class_weights = data.class_weights.to(device);
  if (!data.model_choice.empty()) reporter.later(data.model_choice);
  train_size = data.sources.train->size();
  val_size = data.sources.val ? data.sources.val->size() : 0;
}

// logging.dir and checkpoint.dir, made before anything else is, and the trace's folder checked:
// a folder that cannot be made is said now, not after hours of training.
void Trainer::State::make_run_folders() {
  refuse_run_folder_among_classes(config);
  core::make_output_folder(config.logging.dir, "logging.dir");
  refuse_foreign_run_files(config);
  core::make_output_folder(config.checkpoint_dir(), config.checkpoint.dir.empty() ? "logging.dir" : "checkpoint.dir");
  if (config.train.profile_start_step > 0)  // made when its window comes: a run may end before it
    core::refuse_unmakeable_folder(config.trace_dir(), config.train.profile_dir.empty() ? "logging.dir" : "train.profile.dir");
}

// The model from the registry (or its TorchScript file), with its initial weights.
void Trainer::State::make_the_model() {
  // Seeded right before the model is built, so a run with `batch_size: auto` starts from the same
  // weights as one with the found size written in the config.
  seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
  model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
}

// The model on the device, in the memory format its convolutions run fastest in.
void Trainer::State::place_the_model() {
  model->to(device);
  channels_last = config.uses_channels_last();
  if (channels_last) {
    use_channels_last(*model);
    if (!config.train.channels_last) reporter.later("train.channels_last auto: on (NHWC for " + config.model.name + "'s convolutions)");
  }
  params = model->parameters();
}

// With several ranks every rank starts from rank 0's weights; the buffers that are not parameters
// (batch-norm statistics) are kept apart, for validation to make them rank 0's.
void Trainer::State::share_the_weights() {
  auto* comm = ranks.communicator();
  if (!comm) return;
  std::vector<at::Tensor> state;
  for (const auto& named : model->named_state()) {
    const auto& tensor = named.second;  // a plain reference: C++17 lambdas cannot capture a structured binding
    state.push_back(tensor);
    const bool parameter = std::any_of(params.begin(), params.end(), [&](const at::Tensor& p) { return p.is_same(tensor); });
    if (!parameter) buffers.push_back(tensor);
  }
  dist::broadcast_from_rank0(*comm, state, {});
}

// Steps per epoch and in all: each rank takes every world-th sample; the largest shard sets the
// steps (a rank whose shard is through joins the last step with no samples, so every rank steps alike).
void Trainer::State::count_the_steps() {
  const std::int64_t world = ranks.world_size();
  const std::int64_t shard = config.data.drop_last ? train_size / world : (train_size + world - 1) / world;
  steps_per_epoch = config.data.drop_last ? shard / effective_batch : (shard + effective_batch - 1) / effective_batch;
  if (lone_samples.leave_out) {
    steps_per_epoch = lone_samples.steps_per_epoch;
    reporter.later(lone_samples.note);
  }
  if (steps_per_epoch == 0)
    throw UsageError("data.drop_last with " + std::to_string(train_size) + " training samples and an effective batch of " +
                         std::to_string(effective_batch) + " leaves no step",
                     "lower train.batch_size or train.grad_accum, or set data.drop_last: false");
  if (world > train_size)
    reporter.later(core::counted(world, "rank") + " share " + core::counted(train_size, "training sample") + ": " +
                   core::counted(world - train_size, "rank") + (world - train_size == 1 ? " trains" : " train") +
                   " on none, joining each step with an empty batch");
  else if (effective_batch > shard)
    reporter.later("the effective batch (" + std::to_string(effective_batch) + ") is larger than the " +
                   core::counted(shard, "training sample") + (world > 1 ? " of each rank" : "") +
                   ": every step takes them all, so an epoch is one step of that size");
  if (!config.train.batch_size)
    if (auto note = few_steps_note(micro_batch, config.train.grad_accum, shard, config.data.drop_last); !note.empty())
      reporter.later(std::move(note));
  // epochs x steps past 64 bits (train.epochs: 2^60 "to run until train.max_time") would wrap to a
  // negative count and train nothing: only train.max_steps can bound such a run.
  if (__builtin_mul_overflow(steps_per_epoch, config.train.epochs, &total_steps)) {
    if (config.train.max_steps <= 0)
      throw UsageError("train.epochs " + std::to_string(config.train.epochs) + " x " + std::to_string(steps_per_epoch) +
                           " steps an epoch is past the largest step count (2^63 - 1)",
                       "set train.max_steps to bound the run, or fewer epochs (with train.max_time the run stops at the time "
                       "whatever the epochs, e.g. train.epochs: 1000000)");
    total_steps = config.train.max_steps;
  }
  if (config.train.max_steps > 0) total_steps = std::min(total_steps, config.train.max_steps);
}

void Trainer::State::check_disk_space() {
  CheckpointSpace space;
  space.checkpoint_bytes = estimate_checkpoint_bytes(*model, config.optimizer);
  space.keep_last = config.checkpoint.keep_last;
  space.keeps_best = config.checkpoint.best_metric != "none" && val_size > 0;
  space.weights_bytes = parameter_bytes(*model);
  space.already_there = store->bytes_on_disk();
  std::error_code ec;
  const auto disk = fs::space(store->dir(), ec);
  if (!ec) check_checkpoint_space(space, disk.available, store->dir());
}

void Trainer::State::lock_folders() {
  if (!ranks.writer() || !folder_locks.empty()) return;
  folder_locks.push_back(std::make_unique<core::DirectoryLock>(config.logging.dir, "logging.dir"));
  std::error_code ec;
  if (!config.checkpoint.dir.empty() && !fs::equivalent(config.checkpoint.dir, config.logging.dir, ec))
    folder_locks.push_back(std::make_unique<core::DirectoryLock>(config.checkpoint.dir, "checkpoint.dir"));
  for (const auto& lock : folder_locks)
    if (!lock->unlocked().empty())
      reporter.later("warning: the file system of '" + lock->folder() + "' takes no file locks (" + lock->unlocked() +
                     "; Lustre mounted without -o flock, a FUSE mount such as gcsfuse): the run goes on unlocked, and a second run " +
                     "started in this folder would not be refused but write over this one's files: start one run per folder");
}

// The micro-batch (found by probes when `auto`) and where the data lives. They depend on each
// other: a dataset held in GPU memory leaves less for the batch, and whether it fits depends on
// a step's memory. The cache is decided with the step at the configured batch (or a small one
// for `auto`), then the search sizes the batch in what the cache leaves.
void Trainer::State::place_the_data(const std::string& device_name) {
  data::CachePlan plan;
  {
    // An evaluation has no training step to size (kEvaluationBatch).
    const bool auto_batch = !config.train.batch_size && !evaluating();
    // On the CPU, array data already is in memory and the plan needs no step figure.
    const bool step_matters = config.data.cache != "none" && (device.is_cuda() || !data.sources.train->tensors());
    const auto samples = auto_batch || step_matters ? probe_samples(data, device) : data::TensorDataset{};
    std::uint64_t step_bytes = 0;
    ProbeData probe{samples, data.transform, train_size, 0};
    if (step_matters) {
      seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
      step_bytes = measure_step_memory(config, device, probe, config.train.batch_size.value_or(std::min<std::int64_t>(16, train_size)));
    }
    plan = plan_data_cache(config, data, device, step_bytes);
    if (!auto_batch) {
      micro_batch = config.train.batch_size.value_or(kEvaluationBatch);
      if (!config.train.batch_size)
        reporter.later("batch_size auto: evaluating in batches of " + std::to_string(micro_batch) +
                       " (no training step to size; an out-of-memory error halves them)");
    } else {
      probe.reserve_bytes = cache_reserve_bytes(data, plan, device);
      seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
      const auto cache = ranks.writer() ? (fs::path(config.logging.dir) / "auto_batch.json").string() : std::string();
      const auto choice = find_batch_size(config, device, device_name, probe, cache, probe_progress(ranks.writer() ? &std::cerr : nullptr));
      // Each rank measured its own GPU; all take the smallest, so every rank's steps fit.
      micro_batch = ranks.min(choice.batch, "the agreement on batch_size: auto");
      reporter.later(choice.remembered
                         ? "batch_size auto: " + std::to_string(micro_batch) + ", remembered in " + choice.cache_path + " (" +
                               choice.search.reason + ")"
                         : "batch_size auto: " + std::to_string(micro_batch) + " after " + std::to_string(choice.search.probes.size()) +
                               " probe steps in " + core::format_fixed(choice.seconds, 1) + " s: " + choice.search.reason);
    }
  }
  memory::release_cached_memory(device);
  effective_batch = micro_batch * config.train.grad_accum;
  placement = place_data(config, data, device, plan, effective_batch, micro_batch, static_cast<int>(num_workers), evaluating());
  // A cache holds every sample: the sources keep what they are, not their samples (a table held in
  // GPU memory is not held in RAM for the run as well). It leaves unreadable samples out, so its
  // size is what the sampler draws from.
  if (placement.train_cache) {
    data.sources.train = data::described_only(data.sources.train);
    train_size = placement.train_cache->data().size();
  }
  if (placement.val_cache) {
    data.sources.val = data::described_only(data.sources.val);
    val_size = placement.val_cache->data().size();
  }
  reporter.later("data: " + data.sources.train->description() +
                 (data.sources.val
                      ? "; validation: " + data.sources.val->description()
                      : "; no validation data, so epochs report the training loss only (" +
                            std::string(config.data.source == "synthetic" ? "data.val_samples" : "data.val_path or data.val_fraction") +
                            " adds some)") +
                 // Parsing a large CSV takes a while; it is part of the start-up, not of any epoch.
                 (data.read_seconds >= 0.1 ? "; opened in " + core::format_fixed(data.read_seconds, 2) + " s" : ""));
  for (const auto& note : data.data_notes) reporter.later(note);
  reporter.later(evaluating() ? "data: " + placement.summary + " (one pass to evaluate: no cache is filled)"
                              : "data.cache " + config.data.cache + " -> " +
                                    data::placement_text(data::to_string(placement.plan.mode), device.is_cuda()) + ": " +
                                    placement.summary + " (" + placement.plan.reason + ")");
}

void Trainer::State::report_skipped() {
  auto skipped = placement.skipped;
  for (auto* feed : {placement.train_feed.get(), placement.val_feed.get()})
    if (feed)
      for (auto& line : feed->skipped()) skipped.push_back(line);
  if (skipped.size() <= skipped_reported) return;
  reporter.note(core::counted(std::int64_t(skipped.size() - skipped_reported), "unreadable sample") + " skipped, e.g. " +
                skipped[skipped_reported] + " (" + std::to_string(skipped.size()) + " in all)");
  skipped_reported = skipped.size();
}

void Trainer::State::resolve_workers() {
  const auto system = device::collect_system_info();
  const int gpus = device.is_cuda() ? static_cast<int>(torch::cuda::device_count()) : 0;
  const auto plan = sizing::auto_num_workers(system.usable_cores, gpus, ranks.local_world_size(), system.affinity_narrowed);
  if (!config.data.num_workers) {
    num_workers = plan.workers;
    reporter.later("data.num_workers auto: " + std::to_string(plan.workers) + " (" + plan.reason + ")");
    return;
  }
  num_workers = *config.data.num_workers;
  // A count copied from another machine (DataLoader(num_workers=16) on a 2-core CI box): threads
  // beyond the cores take turns with each other and with the training thread.
  const double cores_per_rank =
      system.affinity_narrowed ? system.usable_cores : system.usable_cores / std::max(1, ranks.local_world_size());
  if (num_workers > 1 && static_cast<double>(num_workers) > cores_per_rank)
    reporter.later("note: data.num_workers " + std::to_string(num_workers) + " is more loader threads than the " +
                   core::format_fixed(cores_per_rank, cores_per_rank == std::floor(cores_per_rank) ? 0 : 1) +
                   " usable cores of a rank here, so they take turns with the training thread; data.num_workers: auto picks " +
                   std::to_string(plan.workers) + ", and gputrain profile measures the fastest count");
}

}  // namespace gputrain::train

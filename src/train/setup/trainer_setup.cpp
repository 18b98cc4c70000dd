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

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/sizing/auto_workers.hpp"
#include "gputrain/train/batch_size.hpp"
#include "gputrain/train/lr_schedule.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "train/checkpoint/checkpoint_space.hpp"
#include "device_settings.hpp"
#include "train/report/human_lines.hpp"
#include "init_weights.hpp"
#include "train/models/builtin_models.hpp"
#include "train/loop/trainer_state.hpp"
#include "train/loop/callbacks/plateau.hpp"
#include "train/config/unread_settings.hpp"

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

dist::GradientSyncOptions sync_options(const DistributedConfig& c) {
  dist::GradientSyncOptions o;
  o.bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.bucket_mb * 1024 * 1024));
  o.first_bucket_bytes = std::max<std::int64_t>(1, static_cast<std::int64_t>(c.first_bucket_mb * 1024 * 1024));
  if (c.grad_dtype == "bf16") o.wire_dtype = at::kBFloat16;
  if (c.grad_dtype == "fp16") o.wire_dtype = at::kHalf;
  return o;
}

// "train.batch_size: 256, train.grad_accum: 1" as a checkpoint's config has them; for `auto`, the
// batch it found, which the checkpoint's global batch tells.
std::string saved_batch_settings(const YAML::Node& saved, const TrainingProgress& at) {
  const auto text = [&](const char* key) {
    const auto value = saved["train"][key];
    return value && value.IsScalar() ? value.Scalar() : std::string("?");
  };
  const std::string batch = text("batch_size"), accum = text("grad_accum");
  std::string found;
  if (batch == "auto" && accum != "?" && at.world_size > 0)
    found = " (which found " + std::to_string(at.global_batch / at.world_size / std::max<std::int64_t>(1, std::stoll(accum))) + ")";
  return "train.batch_size: " + batch + found + ", train.grad_accum: " + accum;
}

// Whether a config difference ("data.path a.csv -> b.csv") can change a built model's tensors:
// the data keys that decide a sample's shape and the number of outputs.
bool shapes_the_model(const std::string& change) {
  static const char* const kKeys[] = {"data.source ", "data.task ",        "data.path ",     "data.labels ",
                                      "data.features ", "data.exclude ", "data.categorical ", "data.image_size ",
                                      "data.shape ", "data.classes ",   "data.outputs "};
  for (const char* key : kKeys)
    if (change.rfind(key, 0) == 0) return true;
  return false;
}

}  // namespace

void Trainer::State::setup() {
  Config rank_config = config;  // the device is this rank's; config itself stays what every rank saves
  rank_config.device.name = ranks.device_name(config.device.name);
  auto run_device = prepare_device(rank_config);
  device = run_device.device;
  pending_notes = run_device.notes;
  ranks.connect(config.distributed, device);
  apply_backend_settings(config.train);
  classification = config.data.task == "classification";
  data = open_data(config, evaluating());
  if (data.class_weights.defined()) class_weights = data.class_weights.to(device);
  if (!data.model_choice.empty()) pending_notes.push_back(data.model_choice);
  train_size = data.sources.train->size();
  val_size = data.sources.val ? data.sources.val->size() : 0;
  if (evaluating() && val_size == 0)
    throw UsageError("--evaluate measures the weights on the config's validation data, and it has none",
                     config.data.source == "synthetic"
                         ? "set data.val_samples above 0"
                         : "set data.val_path to the labelled data to evaluate on (in the training data's format; keep data.path "
                           "as it was trained, since data.standardize and the class names are read from it), or data.val_fraction "
                           "as the run had it");
  // What watches a validation figure needs one: the config check caught synthetic data already.
  const auto refuse_without_validation = [&](bool on, const std::string& who, const std::string& off) {
    if (on && val_size == 0)
      throw UsageError(who + " when its validation figure stops improving, but this run has no validation data",
                       "set data.val_path (a validation file in the training data's format) or data.val_fraction: 0.1 (hold out "
                       "a tenth of the training samples), or " + off);
  };
  refuse_without_validation(config.train.early_stop_patience > 0,
                            "train.early_stop_patience: " + std::to_string(config.train.early_stop_patience) + " stops the run",
                            "train.early_stop_patience: 0");
  refuse_without_validation(config.scheduler.name == "plateau", "scheduler.name plateau lowers the learning rate", "pick another scheduler.name");
  if (ranks.writer() && !evaluating()) {  // before any step: a run must not train for an hour, then fail to save it
    for (const auto& [key, dir] : {std::pair<std::string, std::string>{"logging.dir", config.logging.dir},
                                   {config.checkpoint.dir.empty() ? "logging.dir" : "checkpoint.dir", config.checkpoint_dir()}}) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (!ec) continue;
      // A file where the folder (or one above it) would go: name it, as "Not a directory" does not.
      if (const auto file = core::file_in_the_way(dir))
        throw UsageError(key + ": '" + dir + "' cannot be created: '" + *file + "' is a file",
                         "set " + key + " to a folder (it is created when missing), or move the file '" + *file + "' away");
      throw UsageError(key + ": '" + dir + "' cannot be created: " + ec.message(),
                       "set " + key + " to a folder this user can write (it is created when missing)");
    }
    lock_folders();
  }
  resolve_workers();
  check_scripted_model(config, data, device);  // before the probes and the cache plan run it
  // One pass over the validation data: loading the training set into a cache first would cost
  // more than streaming what is evaluated.
  if (evaluating()) config.data.cache = "none";
  place_the_data(run_device.name);
  // Seeded right before the model is built, so a run with `batch_size: auto` starts from the same
  // weights as one with the found size written in the config.
  seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
  model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
  // Training's settings, not worth a note before an evaluation, whose weights come from its file.
  if (!evaluating()) {
    for (const auto& line : unread_settings(config)) pending_notes.push_back("note: " + line);
    if (const auto line = plateau_patience_note(config); !line.empty()) pending_notes.push_back("note: " + line);
    if (!config.model.init_weights.empty()) load_init_weights(*model, config);
  }
  model->to(device);
  channels_last = config.uses_channels_last();
  if (channels_last) {
    use_channels_last(*model);
    if (!config.train.channels_last) pending_notes.push_back("train.channels_last auto: on (NHWC for " + config.model.name + "'s convolutions)");
  }
  params = model->parameters();
  if (auto* comm = ranks.communicator()) {
    std::vector<at::Tensor> state;
    for (const auto& named : model->named_state()) {
      const auto& tensor = named.second;  // a plain reference: C++17 lambdas cannot capture a structured binding
      state.push_back(tensor);
      const bool parameter = std::any_of(params.begin(), params.end(), [&](const at::Tensor& p) { return p.is_same(tensor); });
      if (!parameter) buffers.push_back(tensor);
    }
    dist::broadcast_from_rank0(*comm, state, {});
  }
  if (auto* comm = ranks.communicator(); comm && !evaluating()) {
    sync = std::make_unique<dist::GradientSync>(params, *comm, sync_options(config.distributed));
    pending_notes.push_back("distributed: " + ranks.summary() + ", gradients in " + core::counted(sync->figures().buckets, "bucket") +
                            " of up to " + core::format_fixed(config.distributed.bucket_mb, 0) + " MiB" +
                            (config.distributed.grad_dtype == "none" ? "" : ", sent as " + config.distributed.grad_dtype));
  }
  if (!evaluating()) direct = DirectBackward::plan(*model, config.train, device);
  if (direct)
    pending_notes.push_back("training step: " + model->name() + "'s backward by hand, without autograd's graph (" + direct->describe() +
                            ", fp32 on the CPU; " +
                            (direct->matmul_library() == CpuMatmul::mkl ? "the same gradients as autograd's)"
                                                                         : "autograd's gradients within fp32 rounding)"));
  if (!evaluating() && config.model.torchscript.empty() && config.model.name == "transformer")
    pending_notes.push_back(models::transformer_attention_note(ModelSpec{config.model, config.data.shape, model_outputs(config)},
                                                               device, config.train.precision));
  optimizer = make_optimizer(config.optimizer, params);
  scaler = std::make_unique<GradScaler>(config.train.precision == Precision::fp16_mixed, device);
  train_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "train");
  val_guard = std::make_unique<memory::OomGuard>(device, micro_batch, oom_policy(config.oom), "validation");
  // Every rank issues the same collectives only if every rank splits its step alike.
  if (ranks.distributed()) train_guard->set_agreement([this](std::int64_t) { return agreed_micro_batch; });
  if (evaluating()) return;  // the rest is about the training steps and their checkpoints

  // Each rank takes every world-th sample; the largest shard sets the steps (a rank whose shard
  // is through joins the last step with no samples, so every rank steps alike).
  const std::int64_t world = ranks.world_size();
  const std::int64_t shard = config.data.drop_last ? train_size / world : (train_size + world - 1) / world;
  steps_per_epoch = config.data.drop_last ? shard / effective_batch : (shard + effective_batch - 1) / effective_batch;
  if (steps_per_epoch == 0)
    throw UsageError("data.drop_last with " + std::to_string(train_size) + " training samples and an effective batch of " +
                         std::to_string(effective_batch) + " leaves no step",
                     "lower train.batch_size or train.grad_accum, or set data.drop_last: false");
  if (effective_batch > shard)
    pending_notes.push_back("the effective batch (" + std::to_string(effective_batch) + ") is larger than the " + std::to_string(shard) +
                            " training samples" + (world > 1 ? " of each rank" : "") +
                            ": every step takes them all, so an epoch is one step of that size");
  if (!config.train.batch_size)
    if (auto note = few_steps_note(micro_batch, config.train.grad_accum, shard, config.data.drop_last); !note.empty())
      pending_notes.push_back(std::move(note));
  total_steps = steps_per_epoch * config.train.epochs;
  if (config.train.max_steps > 0) total_steps = std::min(total_steps, config.train.max_steps);

  store = std::make_unique<CheckpointStore>(config.checkpoint_dir(), config.checkpoint.keep_last);
  if (ranks.writer()) check_disk_space();
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
        pending_notes.push_back("batch_size auto: evaluating in batches of " + std::to_string(micro_batch) +
                                " (no training step to size; an out-of-memory error halves them)");
    } else {
      probe.reserve_bytes = cache_reserve_bytes(data, plan, device);
      seed_everything(static_cast<std::uint64_t>(config.train.seed), device);
      const auto cache = ranks.writer() ? (fs::path(config.logging.dir) / "auto_batch.json").string() : std::string();
      const auto choice = find_batch_size(config, device, device_name, probe, cache, probe_progress(ranks.writer() ? &std::cerr : nullptr));
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
  placement = place_data(config, data, device, plan, effective_batch, micro_batch, static_cast<int>(num_workers), evaluating());
  // A cache leaves unreadable samples out, so its size is what the sampler draws from.
  if (placement.train_cache) train_size = placement.train_cache->data().size();
  if (placement.val_cache) val_size = placement.val_cache->data().size();
  pending_notes.push_back("data: " + data.sources.train->description() +
                          (data.sources.val ? "; validation: " + data.sources.val->description()
                                            : "; no validation data, so epochs report the training loss only (" +
                                                  std::string(config.data.source == "synthetic" ? "data.val_samples"
                                                                                                : "data.val_path or data.val_fraction") +
                                                  " adds some)") +
                          // Parsing a large CSV takes a while; it is part of the start-up, not of any epoch.
                          (data.read_seconds >= 0.1 ? "; opened in " + core::format_fixed(data.read_seconds, 2) + " s" : ""));
  for (const auto& note : data.data_notes) pending_notes.push_back(note);
  pending_notes.push_back(evaluating() ? "data: " + placement.summary + " (one pass to evaluate: no cache is filled)"
                                       : "data.cache " + config.data.cache + " -> " + data::placement_text(data::to_string(placement.plan.mode), device.is_cuda()) + ": " +
                                             placement.summary + " (" + placement.plan.reason + ")");
}

void Trainer::State::report_skipped() {
  auto skipped = placement.skipped;
  for (auto* feed : {placement.train_feed.get(), placement.val_feed.get()})
    if (feed)
      for (auto& line : feed->skipped()) skipped.push_back(line);
  if (skipped.size() <= skipped_reported) return;
  note(core::counted(std::int64_t(skipped.size() - skipped_reported), "unreadable sample") +
       " skipped, e.g. " + skipped[skipped_reported] + " (" + std::to_string(skipped.size()) + " in all)");
  skipped_reported = skipped.size();
}

void Trainer::State::resolve_workers() {
  const auto system = device::collect_system_info();
  const int gpus = device.is_cuda() ? static_cast<int>(torch::cuda::device_count()) : 0;
  const auto plan = sizing::auto_num_workers(system.usable_cores, gpus, ranks.local_world_size(), system.affinity_narrowed);
  if (!config.data.num_workers) {
    num_workers = plan.workers;
    pending_notes.push_back("data.num_workers auto: " + std::to_string(plan.workers) + " (" + plan.reason + ")");
    return;
  }
  num_workers = *config.data.num_workers;
  // A count copied from another machine (DataLoader(num_workers=16) on a 2-core CI box): threads
  // beyond the cores take turns with each other and with the training thread.
  const double cores_per_rank = system.affinity_narrowed ? system.usable_cores : system.usable_cores / std::max(1, ranks.local_world_size());
  if (num_workers > 1 && static_cast<double>(num_workers) > cores_per_rank)
    pending_notes.push_back("note: data.num_workers " + std::to_string(num_workers) + " is more loader threads than the " +
                            core::format_fixed(cores_per_rank, cores_per_rank == std::floor(cores_per_rank) ? 0 : 1) +
                            " usable cores of a rank here, so they take turns with the training thread; data.num_workers: auto picks " +
                            std::to_string(plan.workers) + ", and gputrain profile measures the fastest count");
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
  sinks.push_back(make_console_sink(mode, console, options.console_quiet));
  // A run file the disk refuses says so where the user looks: the console and training.log.
  const SinkWarning warn = [this](const std::string& line) { note(line); };
  sinks.push_back(make_log_file_sink((dir / "training.log").string(), warn));
  if (config.logging.jsonl) sinks.push_back(make_jsonl_sink((dir / "metrics.jsonl").string(), warn));
  if (config.logging.tensorboard) sinks.push_back(make_tensorboard_sink(dir.string(), warn));
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
  info.data_read_seconds = data.read_seconds;
  info.data_load_seconds = placement.load_seconds;
  info.start_step = start_step;
  info.world_size = ranks.world_size();
  info.distributed = ranks.summary();
  info.show_balanced_accuracy = shows_balanced_accuracy();
  for (auto& s : sinks) s->on_start(info);
  for (const auto& line : pending_notes) note(line);
  pending_notes.clear();
}

void Trainer::State::resume() {
  stamp_progress();
  std::string path;
  if (config.checkpoint.resume == "auto") {
    if (auto latest = store->latest()) path = *latest;
  } else if (config.checkpoint.resume != "never") {
    path = config.checkpoint.resume;
  }
  if (path.empty()) return;
  std::string saved_config;
  try {
    progress = load_checkpoint(path, parts(), [&](const std::string& yaml, const TrainingProgress& at) {
      saved_config = yaml;
      refuse_another_run(path, YAML::Load(yaml), at);
    });
  } catch (const Error& e) {
    // A tensor that does not fit names itself; the settings that resized it say why. Other data
    // (a new data.path in a reused logging.dir) resizes the model as surely as model.hidden does.
    std::vector<std::string> model_changes;
    if (!saved_config.empty())
      for (const auto& change : config_differences(saved_config, config_yaml))
        if (change.rfind("model.", 0) == 0 || shapes_the_model(change)) model_changes.push_back(change);
    if (model_changes.empty()) throw;
    const std::string message = std::string(e.what()) + " (the settings that shape the model differ from those " + path +
                                " was written with: " + core::join(model_changes) + ")";
    const std::string remedy = e.remedy() + "; or give this run its own folder (--set logging.dir=runs/NAME)";
    if (e.exit_code() == ExitCode::usage) throw UsageError(message, remedy);
    throw Error(message, remedy, e.exit_code());
  }
  // Said once the sinks exist (fit() makes them), after the setup's notes: where it resumes, then what changed.
  pending_notes.push_back("resumed from " + path + " at step " + std::to_string(progress.step));
  continue_on_this_shape(path);
  last_saved_step = progress.step;
  last_checkpoint = path;
  if (saved_config != config_yaml) note_config_changes(path, saved_config);
}

// Says which settings a resumed run changed, and when the learning-rate schedule moves with them
// (more epochs stretch a cosine or one-cycle schedule: the rate jumps at the resume step).
void Trainer::State::note_config_changes(const std::string& path, const std::string& saved_yaml) {
  const auto changes = config_differences(saved_yaml, config_yaml);
  constexpr std::size_t kListed = 4;
  std::string listed = core::join(std::vector<std::string>(changes.begin(), changes.begin() + std::min(changes.size(), kListed)));
  if (changes.size() > kListed) listed += " and " + std::to_string(changes.size() - kListed) + " more";
  pending_notes.push_back("note: the config differs from the one " + path + " was written with" +
                          (changes.empty() ? "" : ": " + listed) + " (both are kept: config.yaml and the checkpoint)");
  try {
    // The rate the checkpoint's run would have used at this step: its config, the same steps per epoch.
    const auto saved = load_config({{}, {}, saved_yaml});
    std::int64_t saved_total = steps_per_epoch * saved.train.epochs;
    if (saved.train.max_steps > 0) saved_total = std::min(saved_total, saved.train.max_steps);
    const auto saved_rate = [&](std::int64_t step) { return learning_rate_at(saved.scheduler, saved.optimizer.lr, step, saved_total, progress.plateau_scale); };
    const double next = learning_rate_at(config.scheduler, config.optimizer.lr, progress.step, total_steps, progress.plateau_scale);
    // Past the run's end (fewer epochs than the checkpoint did) no step runs at the new rate.
    if (progress.step < total_steps && short_number(next) != short_number(saved_rate(progress.step))) {
      std::string line = "note: the learning-rate schedule changes with the config (" + config.scheduler.name + " over " +
                         std::to_string(total_steps) + " steps): step " + std::to_string(progress.step + 1) + " runs at lr " + short_number(next);
      if (progress.step > 0) line += ", where step " + std::to_string(progress.step) + " ran at " + short_number(saved_rate(progress.step - 1));
      pending_notes.push_back(line);
    }
  } catch (const UsageError&) {
    // A checkpoint from a version whose keys this one does not read: the key list above is all there is.
  }
}

// What a step and a position mean in this run; saved with every checkpoint.
void Trainer::State::stamp_progress() {
  progress.global_batch = effective_batch * ranks.world_size();
  progress.world_size = ranks.world_size();
  progress.train_samples = train_size;
}

// Checks made before anything is restored from the checkpoint at `path`.
void Trainer::State::refuse_another_run(const std::string& path, const YAML::Node& saved, const TrainingProgress& at) const {
  // Another model in the folder is most likely another run's folder reused by mistake: say that,
  // rather than which tensor or optimizer state does not fit.
  const auto scalar = [&](const char* section, const char* key) {
    const auto node = saved[section][key];
    return node && node.IsScalar() ? node.Scalar() : std::string();
  };
  const auto model_of = [](const std::string& name, const std::string& torchscript) {
    return torchscript.empty() ? name : "model.torchscript " + torchscript;
  };
  // The checkpoint keeps the config as given: its `auto` chose by the data's shape, as this run's did.
  std::string saved_name = scalar("model", "name");
  if (saved_name == "auto") saved_name = model_for_samples(config.data.shape);
  const std::string saved_model = model_of(saved_name, scalar("model", "torchscript"));
  const std::string this_model = model_of(config.model.name, config.model.torchscript);
  if (!scalar("model", "name").empty() && saved_model != this_model)
    throw UsageError(path + " is a checkpoint of " + saved_model + ", and this config trains " + this_model +
                         ": the folder looks like another run's (checkpoint.resume: auto continues from what it finds there)",
                     "give this run its own folder (--set logging.dir=runs/NAME), or set checkpoint.resume: never to start over "
                     "in this one (its checkpoints would then be rotated away)");
  // Another optimizer's state cannot be loaded (LibTorch fails with an internal assert): say which.
  const std::string saved_optimizer = scalar("optimizer", "name");
  if (!saved_optimizer.empty() && saved_optimizer != config.optimizer.name)
    throw UsageError("cannot resume from " + path + ": it holds the state of optimizer.name " + saved_optimizer +
                         ", and this config asks for " + config.optimizer.name,
                     "set optimizer.name: " + saved_optimizer + " to continue that run, or checkpoint.resume: never (or "
                     "another logging.dir) to start a new one");
  // A step of the checkpoint must mean a step of this run: the schedule, the step budget and the
  // epoch's position all count them.
  const std::int64_t global_batch = effective_batch * ranks.world_size();
  if (at.global_batch != 0 && at.global_batch != global_batch)
    throw UsageError(path + " was trained with a global batch of " + std::to_string(at.global_batch) + " samples per step (" +
                         core::counted(at.world_size, "rank") + "), and this run's is " + std::to_string(micro_batch) + " x " +
                         std::to_string(config.train.grad_accum) + " accumulation x " + core::counted(ranks.world_size(), "rank") + " = " +
                         std::to_string(global_batch) + ": its steps, schedule and epoch position would mean other samples",
                     "resume with train.batch_size x train.grad_accum x ranks = " + std::to_string(at.global_batch) + " (it ran " +
                         saved_batch_settings(saved, at) +
                         "; on a smaller device the out-of-memory handler splits a batch too large into micro-batches, up to oom.max_halvings), "
                         "or start a new run with checkpoint.resume: never or another logging.dir");
}

// The restored progress, carried over to this run. The same global batch on another number of
// ranks is the same run (rank r takes every world-th sample of the epoch's order), so only the
// position, counted in this rank's share, is rescaled.
void Trainer::State::continue_on_this_shape(const std::string& path) {
  const std::int64_t world = ranks.world_size();
  if (progress.world_size != 0 && progress.world_size != world) {
    const auto position = progress.position * progress.world_size / world;
    pending_notes.push_back("resuming on " + core::counted(world, "rank") + " a run written by " + core::counted(progress.world_size, "rank") +
                            ", with the same global batch: each rank continues at sample " + std::to_string(position) +
                            " of its share of epoch " + std::to_string(progress.epoch + 1));
    progress.position = position;
  }
  // Files that gained or lost samples since: the epoch order is a permutation of another count,
  // so the rest of this epoch is not the rest of the checkpoint's. Allowed (data gets cleaned up
  // between runs), but said.
  if (progress.train_samples != 0 && progress.train_samples != train_size)
    pending_notes.push_back("note: the training data has " + std::to_string(train_size) + " samples, and " + path + "'s run had " +
                            std::to_string(progress.train_samples) + ": the epoch order changes with the count, so the rest of epoch " +
                            std::to_string(progress.epoch + 1) + " is not exactly the samples that run had left");
  stamp_progress();
}

void Trainer::State::write_config_file() {
  if (ranks.writer()) core::write_file_atomically((fs::path(config.logging.dir) / "config.yaml").string(), config_yaml);
}

}  // namespace gputrain::train

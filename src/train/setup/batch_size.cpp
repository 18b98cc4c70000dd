#include "gputrain/train/batch_size.hpp"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>

#include "core/json_text.hpp"
#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/dist/rank_environment.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "gputrain/train/run_setup.hpp"
#include "train/models/frozen_model.hpp"
#include "train/setup/activation_checkpointing_setup.hpp"
#include "train/step/graph_plan.hpp"
#include "train/step/optimizer_shards.hpp"
#include "train/step/step_engine.hpp"
#include "train/step/step_failures.hpp"

namespace gputrain::train {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t tensor_bytes(const at::Tensor& t) { return static_cast<std::uint64_t>(t.numel()) * t.element_size(); }

// A model, optimizer and scaler of their own that run real training steps on `batch` samples of
// the probe pool (repeated when the batch is larger than the pool), measured by the allocator.
// Thrown away afterwards.
class ProbeRig {
 public:
  ProbeRig(const Config& config, c10::Device device, const ProbeData& probe, std::uint64_t reserve_bytes = 0)
      : config_(config), device_(device), data_(probe.samples), transform_(probe.transform) {
    memory::release_cached_memory(device);
    // The dataset the cache will hold during training takes its memory here too, for real: the
    // probes' peaks, their OOMs and the exhaustive truth then all see what training will.
    if (reserve_bytes > 0)
      dataset_placeholder_ = at::empty({static_cast<std::int64_t>(reserve_bytes)}, at::TensorOptions().dtype(at::kByte).device(device));
    model_ = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
    if (!config.train.activation_checkpointing.empty())
      recompute_blocks(*model_, config.train.activation_checkpointing);  // as the run will
    if (!config.train.freeze.empty()) {  // frozen parameters have no gradients or optimizer state in the run either
      std::string said;
      model_ = freeze_parameters(std::move(model_), config.train.freeze, said);
    }
    model_->to(device);
    if (config.uses_channels_last()) use_channels_last(*model_);
    model_->set_training(true);
    params_ = model_->parameters();
    // The probe samples, the parameters and the dataset's place.
    budget_.resident = memory::memory_figures(device).allocated;
    for (const auto& p : model_->named_state()) budget_.known.parameters += tensor_bytes(p.second);
    for (const auto& p : params_)
      if (p.requires_grad()) budget_.known.gradients += tensor_bytes(p);
    budget_.known.optimizer_state =
        sizing::optimizer_state_bytes(config.optimizer.name, config.optimizer.momentum, budget_.known.gradients);
    const auto figures = memory::memory_figures(device);
    budget_.limit = figures.limit;
    budget_.limit_source = figures.limit_source;
    optimizer_ = make_optimizer(config.optimizer, params_);
    if (config.distributed.shard_optimizer) shard_as_the_run_will();
    scaler_ = std::make_unique<GradScaler>(config.train.precision == Precision::fp16_mixed, device);
    // Without train.class_weights: they change the loss's value, not the step's memory or time.
    engine_ = std::make_unique<StepEngine>(StepParts{*model_,
                                                     *optimizer_,
                                                     *scaler_,
                                                     params_,
                                                     transform_,
                                                     config_.train,
                                                     config_.uses_channels_last(),
                                                     config_.data.task == "classification",
                                                     device_,
                                                     nullptr,
                                                     {}});
    engine_->create_optimizer_state();
    engine_->expect_out_of_memory();
    captures_ = run_captures_steps();
  }

  sizing::ProbePoint operator()(std::int64_t batch) {
    sizing::ProbePoint point;
    point.batch = batch;
    const auto indices = at::arange(batch, at::TensorOptions().dtype(at::kLong).device(device_)).remainder(data_.size());
    memory::release_cached_memory(device_);
    memory::reset_peak_memory(device_);
    const auto start = Clock::now();
    const auto before = memory::memory_figures(device_, /*with_limit=*/false).allocated;
    try {
      engine_->on_step_thread([&] { step(indices, before, point); });
    } catch (const c10::OutOfMemoryError&) {
      engine_->after_out_of_memory();  // memory the failed probe left on its thread goes with it
      optimizer_->zero_grad(/*set_to_none=*/true);
      memory::release_cached_memory(device_);
      return sizing::ProbePoint{batch, false, 0, 0, 0, 0};
    } catch (const c10::Error& e) {  // not memory: the model refuses such a batch, which no batch size search gets past
      const std::string what =
          "batch_size auto: its probe step of " + core::counted(batch, "sample") + " failed in LibTorch: " + e.what_without_backtrace();
      if (batch == 1 && batch_norm_refused_one_sample(e.what_without_backtrace()))  // the search could try no more
        throw UsageError(what,
                         "the model's batch norm cannot normalise one sample alone: allow 2 or more (train.max_batch_size, or "
                         "more training samples), or set train.batch_size by hand");
      throw Error(what, "check that data.shape and the model settings agree; if they do, report it with the config");
    }
    point.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    point.fits = true;
    const auto after = memory::memory_figures(device_, /*with_limit=*/false).allocated;  // the step's tensors are gone
    point.persistent = after > before ? after - before : 0;
    return point;
  }

  // distributed.shard_optimizer: this rank keeps the state of its share of the parameters only.
  // The share is split by size as the run splits it (over one group here, which may pick other
  // tensors than the run's optimizer.param_groups, of about the same total).
  void shard_as_the_run_will() {
    const auto env = dist::read_rank_environment();
    if (!env || env->world_size < 2) return;
    const auto own = own_parameters(*optimizer_, env->rank, env->world_size);
    if (auto* stepped = device_stepped(*optimizer_)) stepped->step_only(own);
    std::uint64_t own_bytes = 0, all_bytes = 0;
    for (const auto& p : own) own_bytes += tensor_bytes(p);
    for (const auto& p : params_) all_bytes += p.requires_grad() ? tensor_bytes(p) : 0;
    if (all_bytes > 0)
      budget_.known.optimizer_state = static_cast<std::uint64_t>(static_cast<double>(budget_.known.optimizer_state) *
                                                                 static_cast<double>(own_bytes) / static_cast<double>(all_bytes));
  }

  const sizing::MemoryBudget& budget() const { return budget_; }
  std::int64_t parameter_count() { return train::parameter_count(*model_); }

 private:
  // One probe step: forward and backward, then the optimizer's, each phase's peak measured.
  void step(const at::Tensor& indices, std::uint64_t before, sizing::ProbePoint& point) {
    const data::Batch samples{data_.inputs.index_select(0, indices), data_.targets.index_select(0, indices)};
    const auto loss = engine_->accumulate(
        samples, point.batch, [&] { point.activations = memory::memory_figures(device_, /*with_limit=*/false).allocated - before; });
    const auto forward_backward = memory::memory_figures(device_, /*with_limit=*/false);
    point.peak = forward_backward.peak;
    point.reserved_peak = forward_backward.reserved_peak;
    memory::reset_peak_memory(device_);
    engine_->apply();
    (void)loss.item<float>();  // waits for the device, so the time is the step's
    const auto optimizer_step = memory::memory_figures(device_, /*with_limit=*/false);
    point.optimizer_peak = optimizer_step.peak;
    point.reserved_peak = std::max(point.reserved_peak, optimizer_step.reserved_peak);
    if (captures_) captured_step(samples, point);
  }

  // The run will replay its steps from a CUDA graph, which holds the step's memory in a pool of its
  // own: on the H200 a batch whose eager step fit a 4 GiB cap ran out of memory at its capture. So
  // the step is captured too (the eager one above chose cuDNN's algorithms), and the graph's
  // memory counts: its out-of-memory error is the probe's.
  void captured_step(const data::Batch& samples, sizing::ProbePoint& point) {
    // One eager step in the backend's own hands (it plans its weight casts), then the capture.
    CapturePlan::Options once;
    once.warmup_steps = 1;
    once.max_graphs = 1;
    once.max_captures = 1;
    once.max_shapes = 1;
    engine_->use(make_graph_backend(
        false, [](const std::string&) {}, once));
    struct BackToEager {  // the graph and its pool go with the backend, also after an error
      StepEngine& engine;
      ~BackToEager() { engine.use(make_eager_backend()); }
    } back{*engine_};
    memory::reset_peak_memory(device_);
    for (int step = 0; step < 2; ++step) {
      const auto loss = engine_->accumulate(samples, point.batch);
      engine_->apply();
      (void)loss.item<float>();
    }
    const auto captured = memory::memory_figures(device_, /*with_limit=*/false);
    point.eager = {point.peak, point.reserved_peak};
    point.captured = {captured.peak, captured.reserved_peak};
    point.peak = std::max(point.peak, captured.peak);
    point.reserved_peak = std::max(point.reserved_peak, captured.reserved_peak);
  }

  // Whether the run's steps will be captured, as far as the rig can tell (the run's callbacks and
  // ranks can still rule it out; then the probes were only cautious).
  bool run_captures_steps() {
    GraphConditions conditions;
    conditions.setting = config_.train.cuda_graphs == "off" ? "off" : "auto";  // "on"'s refusal is the run's to say
    conditions.cuda = device_.is_cuda();
    const auto ranks = dist::read_rank_environment();
    conditions.sharded_optimizer = config_.distributed.shard_optimizer && ranks && ranks->world_size > 1;
    conditions.device_stepped = device_stepped(*optimizer_) != nullptr;
    conditions.recomputes_random = recomputation_draws_random_numbers(*model_);
    return decide_cuda_graphs(conditions).capture;
  }

  const Config& config_;
  c10::Device device_;
  const data::TensorDataset& data_;
  const data::BatchTransform& transform_;
  at::Tensor dataset_placeholder_;
  std::unique_ptr<Model> model_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<StepEngine> engine_;  // the run's: the probes measure what it will run
  sizing::MemoryBudget budget_;
  bool captures_ = false;  // the run's steps are CUDA graphs: the probes capture theirs too
};

// The config with everything that does not change a step's memory set to defaults, as YAML.
std::string memory_relevant_yaml(const Config& config) {
  Config c = config;
  c.logging = {};
  c.checkpoint = {};
  c.scheduler = {};
  c.oom = {};
  c.train.epochs = 1;
  c.train.max_steps = 0;
  c.train.max_time = 0;  // raised to resume a run that ran out of time: the batch found still holds
  c.train.seed = 0;
  c.data.shuffle = true;
  c.data.num_workers.reset();  // the loader's settings do not change a step's memory
  c.data.prefetch = 2;
  c.data.pin_memory = true;
  c.data.timeout = 120;
  c.optimizer.lr = 0;
  return to_yaml(c);
}

std::string fnv1a_hex(const std::string& text) {
  std::uint64_t hash = 1469598103934665603ULL;
  for (unsigned char ch : text) hash = (hash ^ ch) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

nlohmann::json cache_key(const Config& config, const std::string& device_name) {
  return {{"device", device_name},
          {"model", config.model_label()},
          {"config_hash", fnv1a_hex(memory_relevant_yaml(config))},
          {"libtorch", TORCH_VERSION}};
}

// A rig for the search: one whose model, optimizer state or dataset place does not fit at all is
// said as such, with the figures, rather than in the allocator's words alone.
std::unique_ptr<ProbeRig> make_rig(const Config& config, c10::Device device, const ProbeData& data, std::uint64_t reserve_bytes) {
  try {
    return std::make_unique<ProbeRig>(config, device, data, reserve_bytes);
  } catch (const c10::OutOfMemoryError& e) {
    throw Error("out of memory before any probe step: the model and its optimizer state" +
                    std::string(reserve_bytes > 0 ? ", with the dataset's place," : "") + " do not fit on " + device.str() + ": " +
                    memory::describe(memory::memory_figures(device)) + ". The allocator said: " + e.what_without_backtrace(),
                "allow more memory (device.max_memory, or --max-memory), " +
                    std::string(reserve_bytes > 0 ? "use a smaller model, or data.cache: ram to keep the dataset out of device memory"
                                                  : "or use a smaller model"));
  }
}

// The rig's probe steps, each handed to `on_probe` too.
std::function<sizing::ProbePoint(std::int64_t)> observed(ProbeRig& rig, const ProbeObserver& on_probe) {
  return [&rig, on_probe](std::int64_t batch) {
    const auto probe = rig(batch);
    if (on_probe) on_probe(probe);
    return probe;
  };
}

}  // namespace

// `auto` finds the largest batch memory allows; on a small dataset (or the CPU's ample RAM) that
// is most of the data, and an epoch of a handful of huge steps learns little at the usual rates.
std::string few_steps_note(std::int64_t micro_batch, std::int64_t grad_accum, std::int64_t samples, bool drop_last) {
  constexpr std::int64_t kFewSteps = 8;
  const std::int64_t effective = micro_batch * grad_accum;
  if (effective <= 0 || effective > samples) return "";  // one step of every sample: said on its own
  const std::int64_t steps = drop_last ? samples / effective : (samples + effective - 1) / effective;
  if (steps >= kFewSteps) return "";
  std::int64_t cap = 2;  // a power of two giving about 4 x kFewSteps steps, never 1 (batch norm refuses it)
  while (cap * 2 <= samples / (4 * kFewSteps)) cap *= 2;
  return "batch_size auto: " + std::to_string(micro_batch) + " leaves " + core::counted(steps, "step") +
         " per epoch: memory allows it, but so few steps learn little at the usual learning rates; cap it with "
         "train.max_batch_size (e.g. " +
         std::to_string(cap) + ")";
}

sizing::BatchSearchOptions batch_search_options(const Config& config, std::int64_t dataset_size) {
  sizing::BatchSearchOptions options;
  options.target_fraction = config.sizing.target_fraction;
  options.throughput = config.sizing.objective == "throughput";
  options.max_batch = dataset_size;
  options.max_batch_reason = "the dataset size (" + std::to_string(dataset_size) + ")";
  if (config.train.max_batch_size > 0 && config.train.max_batch_size < dataset_size) {
    options.max_batch = config.train.max_batch_size;
    options.max_batch_reason = "train.max_batch_size (" + std::to_string(config.train.max_batch_size) + ")";
  }
  return options;
}

MemoryEstimate estimate_model_memory(const Config& config, c10::Device device, const ProbeData& data, const ProbeObserver& on_probe) {
  // The model the batch-size search fits: its first, small probe only sizes a large one, since a
  // small batch's peak is set by gradients and temporaries and a line through it would understate
  // the bytes per sample (see sizing::search_batch_size).
  MemoryEstimate out;
  const auto rig = make_rig(config, device, data, data.reserve_bytes);
  out.parameter_count = rig->parameter_count();
  auto options = batch_search_options(config, data.dataset_size);
  options.throughput = false;
  const auto search = sizing::search_batch_size(observed(*rig, on_probe), rig->budget(), options);
  out.probes = search.probes;
  out.reserved_bytes = search.reserved_bytes;
  const auto& budget = rig->budget();
  out.fitted = search.model.has_value();
  if (out.fitted) {
    out.model = *search.model;
  } else {
    out.model.known = budget.known;
    out.model.resident = budget.resident;
    out.model.limit = budget.limit;
    out.model.limit_source = budget.limit_source;
  }
  return out;
}

std::string probe_text(const sizing::ProbePoint& probe) {
  if (!probe.fits) return std::to_string(probe.batch) + ": out of memory";
  const auto peaks = [](std::uint64_t allocated, std::uint64_t reserved) {
    return core::format_bytes(allocated) + (reserved != 0 ? " (reserved " + core::format_bytes(reserved) + ")" : "");
  };
  std::string text = std::to_string(probe.batch) + ": ";
  if (probe.captured.allocated != 0)
    text += "eager step " + peaks(probe.eager.allocated, probe.eager.reserved) + ", captured step " +
            peaks(probe.captured.allocated, probe.captured.reserved);
  else
    text += "peak " + peaks(probe.peak, probe.reserved_peak);
  return text + " in " + core::format_fixed(probe.seconds, 2) + " s";
}

namespace {

nlohmann::json probe_object(const sizing::ProbePoint& p) {
  nlohmann::json out = {{"batch", p.batch}, {"fits", p.fits}, {"peak_bytes", p.peak}, {"seconds", p.seconds}};
  if (p.reserved_peak != 0) out["reserved_peak_bytes"] = p.reserved_peak;
  if (p.captured.allocated != 0) {
    out["eager_step"] = {{"peak_bytes", p.eager.allocated}, {"reserved_peak_bytes", p.eager.reserved}};
    out["captured_step"] = {{"peak_bytes", p.captured.allocated}, {"reserved_peak_bytes", p.captured.reserved}};
  }
  return out;
}

}  // namespace

std::string probe_json(const sizing::ProbePoint& p) { return core::json_text(probe_object(p)); }

ProbeObserver probe_progress(std::ostream* out, std::chrono::seconds quiet) {
  return [out, quiet, start = Clock::now(), steps = 0](const sizing::ProbePoint& probe) mutable {
    ++steps;
    if (core::stop_requested())
      throw Error("interrupted while finding batch_size auto (after probe step " + std::to_string(steps) +
                      "), before any training step: nothing to resume",
                  "run the same command again to start over, or set train.batch_size to skip the search", ExitCode::interrupted);
    if (out && Clock::now() - start >= quiet)
      *out << "batch_size auto: probe step " << steps << ", batch " << probe_text(probe) << "\n" << std::flush;
  };
}

BatchSizeChoice find_batch_size(const Config& config, c10::Device device, const std::string& device_name, const ProbeData& data,
                                const std::string& cache_path, const ProbeObserver& on_probe) {
  BatchSizeChoice choice;
  choice.cache_path = cache_path;
  const auto key = cache_key(config, device_name);
  if (!cache_path.empty()) {
    std::ifstream in(cache_path);
    if (in) {
      const auto stored = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (stored.is_object() && stored.value("key", nlohmann::json()) == key && stored.contains("batch") &&
          stored["batch"].is_number_integer() && stored["batch"].get<std::int64_t>() >= 1) {
        choice.batch = stored["batch"].get<std::int64_t>();
        choice.search.batch = choice.batch;
        choice.search.memory_batch = stored.value("memory_batch", choice.batch);
        choice.search.reason = stored.value("reason", std::string("remembered"));
        choice.remembered = true;
        return choice;
      }
    }
  }
  const auto start = Clock::now();
  {
    const auto rig = make_rig(config, device, data, data.reserve_bytes);
    choice.budget = rig->budget();
    choice.search = sizing::search_batch_size(observed(*rig, on_probe), choice.budget, batch_search_options(config, data.dataset_size));
  }
  memory::release_cached_memory(device);
  choice.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  choice.batch = choice.search.batch;
  if (!cache_path.empty()) {
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& p : choice.search.probes) probes.push_back(probe_object(p));
    const nlohmann::json record = {{"key", key},
                                   {"batch", choice.batch},
                                   {"memory_batch", choice.search.memory_batch},
                                   {"reason", choice.search.reason},
                                   {"probes", probes},
                                   {"limit_bytes", choice.budget.limit},
                                   {"data_reserve_bytes", data.reserve_bytes},
                                   {"limit_source", choice.budget.limit_source},
                                   {"seconds", choice.seconds}};
    core::write_file_atomically(cache_path, core::json_text(record, 2) + "\n");
  }
  return choice;
}

std::uint64_t measure_step_memory(const Config& config, c10::Device device, const ProbeData& data, std::int64_t batch) {
  memory::release_cached_memory(device);
  const auto before = memory::memory_figures(device, /*with_limit=*/false).allocated;
  std::uint64_t peak = 0;
  {
    const auto rig = make_rig(config, device, data, 0);
    const auto point = (*rig)(std::min(batch, data.dataset_size));
    peak = point.fits ? std::max(point.peak, point.optimizer_peak) : 0;
  }
  memory::release_cached_memory(device);
  return peak > before ? peak - before : 0;
}

ExhaustiveResult find_largest_fitting_batch(const Config& config, c10::Device device, const ProbeData& data, std::int64_t fits,
                                            std::int64_t upper, const ProbeObserver& on_probe) {
  ExhaustiveResult out;
  const auto rig_itself = make_rig(config, device, data, data.reserve_bytes);
  const auto rig = observed(*rig_itself, on_probe);
  out.steps = 1;
  if (rig(upper).fits) {
    out.largest = upper;
    return out;
  }
  std::int64_t lo = std::max<std::int64_t>(1, fits), hi = upper;  // lo fits, hi does not
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    ++out.steps;
    (rig(mid).fits ? lo : hi) = mid;
  }
  out.largest = lo;
  memory::release_cached_memory(device);
  return out;
}

}  // namespace gputrain::train

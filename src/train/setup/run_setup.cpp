#include "gputrain/train/run_setup.hpp"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <utility>

#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/loader.hpp"
#include "gputrain/device/gpu_info.hpp"
#include "gputrain/device/select.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/model_registry.hpp"

#include "cpu_precision.hpp"
#include "setup_progress.hpp"
#include "train/data_checks/augmentation.hpp"
#include "train/data_checks/class_balance.hpp"
#include "train/data_checks/class_weights.hpp"
#include "train/data_checks/constant_columns.hpp"
#include "train/data_checks/data_scale.hpp"
#include "train/data_checks/finite_data.hpp"
#include "train/data_checks/id_columns.hpp"

namespace gputrain::train {

RunDevice prepare_device(const Config& config) {
  // Counted from the start, so the memory model and the cap see the data and the model too.
  memory::install_counting_cpu_allocator();
  RunDevice run;
  const std::string& spec = config.device.name;
  if (spec == "cpu") {
    run.name = "cpu";
  } else {
    const auto inventory = device::discover_gpus();
    const auto choice = device::select_device(spec, inventory);
    if (choice.kind == device::DeviceChoice::Kind::cpu) {
      run.name = "cpu";
      if (spec == "auto") run.notes.push_back("no GPU is visible: training on the CPU (run `gputrain verify` to see why)");
    } else {
      if (!torch::cuda::is_available())
        throw EnvironmentError("the driver reports a GPU but LibTorch cannot use CUDA",
                               "run `gputrain verify` to see which CUDA library or driver is at fault");
      run.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(choice.index));
      for (const auto& gpu : inventory.gpus)
        if (gpu.index == choice.index) run.name = gpu.name;
    }
  }
  if (config.device.max_memory != 0) memory::cap_memory(run.device, config.device.max_memory);
  // A CPU run's steps, data and model are all host memory, which Linux hands out beyond what it
  // has and then takes back by killing the process. Without a cap of the user's, the run gets the
  // typed OutOfMemoryError past 90 % of the RAM free now, which the OOM guard answers by splitting.
  if (!run.device.is_cuda()) {
    if (config.device.max_memory != 0)
      memory::set_cpu_resident_limit(0);
    else
      memory::hold_to_free_ram();
  }
  if (!run.device.is_cuda())  // half precision without the CPU's instructions for it: many times fp32's step
    if (auto note = cpu_precision_note(config.train.precision, cpu_half_support()); !note.empty()) run.notes.push_back(std::move(note));
  return run;
}

std::int64_t model_outputs(const Config& config) {
  return config.data.task == "classification" ? config.data.classes.value_or(10) : config.data.outputs;
}

namespace {

// What data::open_sources reads: the data.* keys, and how far a long read is.
data::SourceSpec source_spec(const Config& config, bool evaluating, SetupProgress& reading) {
  const auto& d = config.data;
  data::SourceSpec spec;
  spec.source = d.source;
  spec.task = d.task;
  spec.path = d.path;
  spec.labels = d.labels;
  spec.features = d.features;
  spec.exclude = d.exclude;
  spec.categorical = d.categorical;
  spec.missing = d.missing;
  spec.val_path = d.val_path;
  spec.val_labels = d.val_labels;
  spec.dsn = d.dsn;
  spec.query = d.query;
  spec.val_query = d.val_query;
  spec.streams = static_cast<int>(d.streams.value_or(0));
  spec.image_size = d.image_size;
  spec.samples = d.samples;
  spec.val_samples = d.val_samples;
  spec.val_fraction = d.val_fraction;
  spec.split_seed = static_cast<std::uint64_t>(config.train.seed);
  spec.evaluate_on_val_path = evaluating;
  spec.synthetic = {d.task, d.shape, model_outputs(config), static_cast<std::uint64_t>(config.train.seed)};
  spec.read_progress = [&reading](const std::string& path, std::uint64_t done, std::uint64_t total) {
    reading("reading " + path, done, total, [&] { return core::format_bytes(done) + " of " + core::format_bytes(total); });
  };
  // A query's rows: how many of the planner's estimate, the bytes, their rate and what is left.
  spec.row_progress = [&reading, start = std::chrono::steady_clock::now()](const std::string& what, std::int64_t rows,
                                                                           std::int64_t estimate, std::uint64_t bytes) {
    reading("reading the rows of " + what, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(estimate), [&] {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::string text = std::to_string(rows) + " of ~" + core::counted(estimate, "row") + ", " + core::format_bytes(bytes);
      if (seconds > 0.5) text += ", " + core::format_bytes(static_cast<std::uint64_t>(static_cast<double>(bytes) / seconds)) + "/s";
      if (seconds > 0.5 && rows > 0 && estimate > rows)
        text += ", ~" + core::duration_text(seconds * static_cast<double>(estimate - rows) / static_cast<double>(rows)) + " left";
      return text;
    });
  };
  spec.synthetic_progress = [&reading](const std::string& doing, std::int64_t done, std::int64_t total) {
    reading(doing, static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(total),
            [&] { return std::to_string(done) + " of " + core::counted(total, "sample"); });
  };
  return spec;
}

// data.classes against the labels (or found from them), and the regression's outputs.
void check_the_classes(Config& config, RunData& out, const data::SourceSpec& spec) {
  const auto& d = config.data;
  const auto& layout = out.sources.train->layout();
  if (d.task == "classification") {
    const auto found = out.sources.classes;
    if (d.classes && *d.classes < found)
      throw UsageError("data.classes is " + std::to_string(*d.classes) + " but the labels go up to class id " + std::to_string(found - 1),
                       "set data.classes: auto (or at least " + std::to_string(found) + ")");
    if (d.source != "synthetic") {
      refuse_single_class(out.sources, spec);
      refuse_identifier_labels(out.sources, spec);
    }
    if (!d.classes) {
      refuse_sparse_class_ids(out.sources);
      config.data.classes = std::max<std::int64_t>(2, found);
    }
  } else if (d.source != "synthetic") {
    config.data.outputs = layout.target_shape.empty() ? 1 : layout.target_shape[0];
  }
}

// The notes on the data before training: scale, id and constant columns, class balance and weights.
void note_what_the_data_says(Config& config, RunData& out) {
  const auto& d = config.data;
  const auto note = [&out](std::string text) {
    if (!text.empty()) out.data_notes.push_back(std::move(text));
  };
  for (const auto& text : out.sources.notes) note(text);
  if (d.standardize) note(standardize_inputs(config, out.sources.train));
  if (!d.standardize && d.mean.empty()) note(feature_scale_hint(*out.sources.train, out.sources.feature_names));
  note(id_column_hint(config, *out.sources.train, out.sources.feature_names));
  for (auto& text : constant_column_notes(config, *out.sources.train, out.sources.feature_names)) note(std::move(text));
  note(scale_targets(config, *out.sources.train, out.transform));
  if (d.task == "classification") {
    const auto& weights = config.train.class_weights;
    // Notes on how the user's classes fall; synthetic classes fall as the generator drew them (a
    // thousand classes of a dozen samples each are uneven by chance), which no one can act on.
    if (d.source != "synthetic") {
      const auto balance = class_balance_note(out.sources, config.data.classes.value_or(0), weights.any());
      out.unbalanced_classes = !balance.empty();
      note(balance);
      note(unseen_classes_note(out.sources, config.data.classes.value_or(0)));
      note(empty_class_ids_note(out.sources));
      note(look_alike_classes_note(out.sources.class_names));
    }
    out.class_weights = resolve_class_weights(weights, *out.sources.train, config.data.classes.value_or(0));
    note(
        class_weights_note(out.class_weights, weights, out.sources.class_names, config.checkpoint.best_metric, out.sources.val != nullptr));
  }
}

}  // namespace

RunData open_data(Config& config, bool evaluating) {
  const auto& d = config.data;
  SetupProgress reading(std::cerr);  // a large CSV's parse takes a while
  const auto spec = source_spec(config, evaluating, reading);
  RunData out;
  const auto start = std::chrono::steady_clock::now();
  out.sources = data::open_sources(spec);
  out.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  refuse_nonfinite_samples(config, out.sources);
  const auto& layout = out.sources.train->layout();
  config.data.shape = layout.input_shape;
  if (config.model.name == "auto" && config.model.torchscript.empty()) {
    config.model.name = model_for_samples(layout.input_shape);
    out.model_choice =
        "model.name auto: " + config.model.name + ", for samples shaped " + c10::str(c10::IntArrayRef(layout.input_shape)) +
        (config.model.name == "small_cnn" ? " ([channels, height, width])" : " (small_cnn is for [channels, height, width] images)");
  }
  check_the_classes(config, out, spec);
  if (!d.mean.empty() && (layout.input_shape.empty() || layout.input_shape[0] != static_cast<std::int64_t>(d.mean.size())))
    throw UsageError("data.mean has " + std::to_string(d.mean.size()) + " values but samples have " +
                         std::to_string(layout.input_shape.empty() ? 0 : layout.input_shape[0]) + " channels (shape " +
                         c10::str(c10::IntArrayRef(layout.input_shape)) + ")",
                     "give one mean and one std per channel");
  note_what_the_data_says(config, out);
  refuse_crop_wider_than_images(d, layout.input_shape);
  out.transform.mean = d.mean;
  out.transform.std = d.std;
  out.transform.crop_padding = d.crop_padding;
  out.transform.hflip = d.hflip;
  return out;
}

namespace {

// Why sample `index` cannot be read, as the loader that skipped it was told ("train/a/1.jpg:
// corrupt JPEG: ..."), and the fix for such files when there is one.
std::pair<std::string, std::string> why_unreadable(const data::Dataset& set, std::int64_t index) {
  const auto& layout = set.layout();
  auto input = at::empty(layout.input_shape, layout.input_dtype);
  auto target = at::empty(layout.target_shape, layout.target_dtype);
  try {
    set.read(index, input.data_ptr(), target.data_ptr());
  } catch (const data::SkippedSample& e) {
    return {set.origin(index) + ": " + e.what(), e.fix()};
  }
  return {set.origin(index) + " reads now", ""};  // a file mended meanwhile
}

}  // namespace

data::TensorDataset probe_samples(const RunData& data, c10::Device device, std::int64_t count, std::uint64_t most_bytes) {
  const auto& train = *data.sources.train;
  // The probes repeat what they are given: no need for 1,024 samples of large images, which at
  // 3 x 8192 x 8192 would be 192 GiB.
  const auto sample_bytes =
      static_cast<std::uint64_t>(std::max<std::int64_t>(1, train.layout().input_bytes() + train.layout().target_bytes()));
  const auto within_bytes = static_cast<std::int64_t>(most_bytes / sample_bytes);
  count = std::min(count, std::max<std::int64_t>(within_bytes, 3));  // 3: the TorchScript check's odd batch
  if (auto whole = train.tensors()) {
    const auto n = std::min(count, whole->size());
    return {whole->inputs.slice(0, 0, n).to(device), whole->targets.slice(0, 0, n).to(device)};
  }
  // Read in order through a loader-free pass: only the first samples are decoded.
  data::Loader loader(data.sources.train, std::min(count, train.size()), data::LoaderOptions{0, 1, false, 600, c10::kCPU});
  loader.start(at::arange(std::min(count, train.size()), at::kLong), std::min(count, train.size()));
  const auto fed = loader.next();
  if (!fed) {
    const auto [why, fix] = why_unreadable(train, 0);
    throw UsageError(
        train.description() + ": none of the first " + core::counted(std::min(count, train.size()), "sample") +
            " can be read; the first: " + why,
        !fix.empty() ? fix
                     : "replace or remove the files that cannot be read (a copy cut short, or files of another format), then run again");
  }
  return {fed->batch.inputs.to(device), fed->batch.targets.to(device)};
}

std::uint64_t dataset_bytes(const RunData& data) {
  std::uint64_t total = 0;
  for (const auto& set : {data.sources.train, data.sources.val})
    if (set) total += static_cast<std::uint64_t>(set->size() * (set->layout().input_bytes() + set->layout().target_bytes()));
  return total;
}

std::uint64_t cache_reserve_bytes(const RunData& data, const data::CachePlan& plan, c10::Device device) {
  if (plan.mode != data::CacheMode::vram || !device.is_cuda()) return 0;
  const auto bytes = dataset_bytes(data);
  return bytes + data::gather_chunk_bytes(bytes);
}

data::CachePlan plan_data_cache(const Config& config, const RunData& data, c10::Device device, std::uint64_t step_bytes,
                                data::CacheFigures* figures_out) {
  data::CacheFigures f;
  f.dataset_bytes = dataset_bytes(data);
  f.step_bytes = step_bytes;
  f.gpu = device.is_cuda();
  f.in_memory = data.sources.train->tensors().has_value();
  f.host_free_bytes = memory::memory_figures(c10::Device(c10::kCPU)).free();
  f.device_free_bytes = f.gpu ? memory::memory_figures(device).free() : f.host_free_bytes;
  if (figures_out) *figures_out = f;
  return data::plan_cache(config.data.cache, f);
}

namespace {

// A streamed run's staging buffers are allocated whole before the first batch, and filled as it
// goes: past the free RAM (large images in a large batch) the system would kill the run mid-epoch.
void refuse_staging_past_free_ram(const RunData& data, const data::LoaderOptions& options, std::int64_t train_batch,
                                  std::int64_t val_batch) {
  std::uint64_t total = 0;
  std::vector<std::string> parts;
  const auto add = [&](const data::Dataset& set, std::int64_t batch, const char* what) {
    if (batch <= 0) return;
    const auto [buffers, bytes] = data::Loader::staging_for(set.layout(), batch, options);
    total += buffers * bytes;
    parts.push_back(core::counted(static_cast<std::int64_t>(buffers), "buffer") + " of " + core::format_bytes(bytes) + " (" +
                    core::counted(batch, "sample") + ") for " + what);
  };
  add(*data.sources.train, train_batch, "training");
  if (data.sources.val) add(*data.sources.val, val_batch, "validation");
  const auto free = memory::memory_figures(c10::Device(c10::kCPU)).free();
  if (free == 0 || total <= free) return;
  throw UsageError("the data loader's staging buffers need " + core::format_bytes(total) + " of RAM (" + core::join(parts) +
                       "), more than the " + core::format_bytes(free) + " free",
                   "stream smaller batches: lower train.batch_size or the samples' size (data.image_size), or hold fewer at once "
                   "(data.prefetch, data.num_workers: buffers = workers x prefetch)");
}

}  // namespace

DataPlacement place_data(const Config& config, const RunData& data, c10::Device device, const data::CachePlan& plan,
                         std::int64_t train_batch, std::int64_t val_batch, int workers, bool evaluating) {
  DataPlacement out;
  out.plan = plan;
  const auto& src = data.sources;
  std::int64_t samples = (evaluating ? 0 : src.train->size()) + (src.val ? src.val->size() : 0);
  if (plan.mode != data::CacheMode::none) {
    const auto start = std::chrono::steady_clock::now();
    const auto load = [&](const data::Dataset& set) {
      // Decoding a large image folder (ImageNet: many minutes) takes a while.
      SetupProgress loading(std::cerr);
      const auto progress = [&](std::int64_t done, std::int64_t total) {
        loading("loading " + set.description() + " into the cache", static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(total),
                [&] { return std::to_string(done) + " of " + std::to_string(total) + " samples"; });
      };
      // The training thread has nothing to do until the cache is full, so it decodes too (with
      // data.num_workers: 0 it is the only one, as asked).
      auto m = data::materialize(set, workers + 1, progress);
      out.skipped.insert(out.skipped.end(), m.skipped.begin(), m.skipped.end());
      return std::make_unique<data::DeviceCache>(std::move(m.set), plan.mode, device);
    };
    out.train_cache = load(*src.train);
    if (src.val) out.val_cache = load(*src.val);
    out.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.train_feed = out.train_cache->feed();
    if (out.val_cache) out.val_feed = out.val_cache->feed();
    const std::uint64_t bytes = out.train_cache->bytes() + (out.val_cache ? out.val_cache->bytes() : 0);
    const auto left = memory::memory_figures(device);
    // On the CPU the caller says where the data is ("vram (in RAM: training on the CPU)").
    const std::string where = !device.is_cuda() ? "" : out.train_cache->mode() == data::CacheMode::vram ? " in GPU memory" : " in RAM";
    out.summary = std::to_string(samples - static_cast<std::int64_t>(out.skipped.size())) + " samples, " + core::format_bytes(bytes) +
                  where + " (loaded in " + core::format_fixed(out.load_seconds, 2) + " s), " + core::format_bytes(left.free()) +
                  " left for training";
  } else {
    const data::LoaderOptions options{workers, static_cast<int>(config.data.prefetch), config.data.pin_memory, config.data.timeout, device};
    refuse_staging_past_free_ram(data, options, evaluating ? 0 : train_batch, src.val ? val_batch : 0);
    std::uint64_t staging = 0;
    if (!evaluating) {  // an evaluation reads the training data for its class names and figures only
      auto train_loader = std::make_unique<data::Loader>(src.train, train_batch, options);
      staging = train_loader->staging_bytes();
      out.train_feed = std::move(train_loader);
    }
    if (src.val) {
      auto val_loader = std::make_unique<data::Loader>(src.val, val_batch, options);
      staging += val_loader->staging_bytes();
      out.val_feed = std::move(val_loader);
    }
    out.summary = core::counted(samples, "sample") + " streamed by " + core::counted(workers, "loader thread") + " (prefetch " +
                  std::to_string(config.data.prefetch) + ", " + (device.is_cuda() && config.data.pin_memory ? "pinned " : "") +
                  core::format_bytes(staging) + " of staging buffers)";
  }
  return out;
}

}  // namespace gputrain::train

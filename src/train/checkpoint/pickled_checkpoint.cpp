// Checkpoints of format 3: one dict, pickled by LibTorch as torch.save pickles, so that Python's
// torch.load(path, weights_only=True) opens it (docs/checkpoints.md has the layout).

#include <ATen/ops/full.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/optim/optimizer.h>

#include <exception>
#include <string_view>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/text_encoding.hpp"

#include "checkpoint_file.hpp"
#include "gputrain/train/amp.hpp"
#include "optimizer_state_dict.hpp"
#include "pickle_dict.hpp"
#include "train/models/state_dict_file.hpp"
#include "train/models/state_dict_pickle.hpp"

namespace gputrain::train {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

constexpr char kFormatName[] = "gputrain checkpoint";

Dict tensor_dict(const NamedTensors& tensors) {
  Dict d = named_dict();
  for (const auto& [name, t] : tensors) d.insert(name, on_host(t));
  return d;
}

// PyTorch's GradScaler.state_dict() (empty when the scaler is off, as PyTorch's is), and the count
// of steps it skipped, which PyTorch's load_state_dict ignores.
Dict scaler_dict(GradScaler& scaler) {
  Dict d = named_dict();
  if (!scaler.enabled()) return d;
  const auto& options = scaler.options();
  d.insert("scale", scaler.scale_value());
  d.insert("growth_factor", options.growth_factor);
  d.insert("backoff_factor", options.backoff_factor);
  d.insert("growth_interval", options.growth_interval);
  for (const auto& [name, t] : scaler.state())
    if (name == "growth_tracker") d.insert("_growth_tracker", t.item<std::int64_t>());
  d.insert("skipped_steps", scaler.skipped_steps());
  return d;
}

// The schedule is a function of the step; what PyTorch's LRScheduler.state_dict() would show of it,
// and the factor callbacks scale it by (train.scheduler: plateau).
Dict scheduler_dict(torch::optim::Optimizer& optimizer, const TrainingProgress& progress) {
  Dict d = named_dict();
  List lrs(c10::AnyType::get());
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  d.insert("last_epoch", progress.step);
  d.insert("_step_count", progress.step + 1);
  d.insert("_last_lr", lrs);
  d.insert("lr_scale", progress.lr_scale);
  return d;
}

Dict progress_dict(const TrainingProgress& progress, const NamedTensors& rng) {
  Dict d = named_dict();
  d.insert("step", progress.step);
  d.insert("epoch", progress.epoch);
  d.insert("position", progress.position);
  d.insert("global_batch", progress.global_batch);
  d.insert("world_size", progress.world_size);
  d.insert("train_samples", progress.train_samples);
  d.insert("trained_seconds", progress.trained_seconds);
  d.insert("data_rows", progress.data_rows);
  Dict callbacks = named_dict();
  for (const auto& [name, state] : progress.callbacks) {
    Dict values = named_dict();
    for (const auto& [key, value] : state) values.insert(key, value);
    callbacks.insert(name, values);
  }
  d.insert("callbacks", callbacks);
  d.insert("rng", tensor_dict(rng));
  return d;
}

// Reads the dict's fields, naming the file and the field when one is missing or of another type.
class Fields {
 public:
  Fields(const std::string& path, std::string where) : path_(path), where_(std::move(where)) {}

  [[noreturn]] void refuse(const std::string& key, const std::string& why) const {
    throw CheckpointDamaged("checkpoint '" + path_ + "': " + where_ + key + " " + why,
                            "resume from another checkpoint of the run (checkpoint.resume: PATH), or set checkpoint.resume: never");
  }
  const c10::IValue& at(const Dict& d, const std::string& key) const {
    const auto found = d.find(key);
    if (found == d.end()) refuse(key, "is missing");
    return found->value();
  }
  Dict dict(const Dict& d, const std::string& key) const {
    const auto& v = at(d, key);
    if (!v.isGenericDict()) refuse(key, "is not a dict");
    return v.toGenericDict();
  }
  double number(const Dict& d, const std::string& key) const {
    const auto& v = at(d, key);
    if (!v.isInt() && !v.isDouble()) refuse(key, "is not a number");
    return v.toScalar().toDouble();
  }
  std::int64_t whole(const Dict& d, const std::string& key) const {
    const auto& v = at(d, key);
    if (!v.isInt()) refuse(key, "is not an integer");
    return v.toInt();
  }
  std::string text(const Dict& d, const std::string& key) const {
    const auto& v = at(d, key);
    if (!v.isString()) refuse(key, "is not text");
    return v.toStringRef();
  }
  NamedTensors tensors(const Dict& d, const std::string& key) const {
    NamedTensors out;
    for (const auto& entry : dict(d, key)) {
      if (entry.key().isString() && entry.key().toStringRef() == kBuildStateKey) continue;  // a Python state_dict's _metadata
      if (!entry.key().isString() || !entry.value().isTensor()) refuse(key, "holds something other than named tensors");
      out.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
    }
    return out;
  }

 private:
  const std::string& path_;
  std::string where_;
};

TrainingProgress read_progress(const Dict& top, const std::string& path, double lr_scale) {
  const Fields fields(path, "progress.");
  const auto d = Fields(path, "").dict(top, "progress");
  TrainingProgress progress;
  progress.step = fields.whole(d, "step");
  progress.epoch = fields.whole(d, "epoch");
  progress.position = fields.whole(d, "position");
  progress.global_batch = fields.whole(d, "global_batch");
  progress.world_size = fields.whole(d, "world_size");
  progress.train_samples = fields.whole(d, "train_samples");
  progress.trained_seconds = fields.number(d, "trained_seconds");
  progress.data_rows = fields.text(d, "data_rows");
  progress.lr_scale = lr_scale;
  for (const auto& entry : fields.dict(d, "callbacks")) {
    const auto name = entry.key().toStringRef();
    if (!entry.value().isGenericDict()) fields.refuse("callbacks." + name, "is not a dict");
    const Fields values(path, "progress.callbacks." + name + ".");
    auto& state = progress.callbacks[name];  // an empty state too: the callback was there
    for (const auto& value : entry.value().toGenericDict())
      state[value.key().toStringRef()] = values.number(entry.value().toGenericDict(), value.key().toStringRef());
  }
  return progress;
}

}  // namespace

void write_pickled_checkpoint(const std::string& path, const CheckpointParts& parts, const TrainingProgress& progress,
                              const std::string& config_yaml, const NamedTensors& rng) {
  Dict top = named_dict();
  top.insert("format", kFormatName);
  top.insert("format_version", kCheckpointFormat);
  const auto named = parts.model.named_state();
  top.insert("model", tensor_dict(named));
  top.insert("optimizer", optimizer_state_dict(parts.optimizer, named));
  top.insert("scaler", scaler_dict(parts.scaler));
  top.insert("scheduler", scheduler_dict(parts.optimizer, progress));
  top.insert("progress", progress_dict(progress, rng));
  top.insert("config", core::surrogate_escaped(config_yaml));  // Python reads a pickled str as UTF-8
  if (!progress.callback_tensors.empty()) {
    Dict tensors = named_dict();
    for (const auto& [name, named_tensors] : progress.callback_tensors) tensors.insert(name, tensor_dict(named_tensors));
    top.insert("callback_tensors", tensors);
  }
  // As torch.save: data.pkl, and each tensor's storage in data/<n>. Dicts and lists untagged
  // (LibTorch tags them with a TorchScript type by default, a global weights_only refuses).
  std::string pickle;
  torch::jit::Pickler pickler([&](const char* bytes, std::size_t n) { pickle.append(bytes, n); }, nullptr, nullptr, nullptr, nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(top);
  pickler.stop();
  core::write_file_atomically(path, [&](const std::function<void(std::string_view)>& append) {
    // The first write that fails (a full disk) is rethrown once LibTorch's writer is done: a short
    // write would make it throw again from its destructor, which ends the process.
    std::exception_ptr failed;
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, std::size_t n) {
      if (!failed) try {
          append(std::string_view(static_cast<const char*>(bytes), n));
        } catch (...) {
          failed = std::current_exception();
        }
      return n;
    });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    const auto& tensors = pickler.tensorData();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto storage = torch::jit::getWriteableTensorData(tensors[i]);
      writer.writeRecord("data/" + std::to_string(i), storage.data(), storage.sizeInBytes());
    }
    writer.writeEndOfFile();
    if (failed) std::rethrow_exception(failed);
  });
}

bool holds_gputrain_run(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("data.pkl")) return false;
    const auto [data, size] = reader.getRecord("data.pkl");
    const std::string_view pickle(static_cast<const char*>(data.get()), size);
    return pickle.find(kFormatName) != std::string_view::npos;  // a short string pickles as its UTF-8 bytes
  } catch (const c10::Error&) {
    return false;
  }
}

CheckpointContents read_pickled_checkpoint(const std::string& path) {
  const auto value = unpickle_torch_save(path);
  const auto is_ours = [&] {
    if (!value.isGenericDict()) return false;
    const auto format = value.toGenericDict().find("format");
    return format != value.toGenericDict().end() && format->value().isString() && format->value().toStringRef() == kFormatName;
  };
  if (!is_ours())
    throw UsageError("checkpoint '" + path +
                         "' cannot be read: it is a torch.save file that holds no gputrain run to resume (not a "
                         "checkpoint gputrain wrote)",
                     "resume from a checkpoint gputrain wrote; to start from a Python model's weights (a state_dict torch.save "
                     "wrote), set model.init_weights: " +
                         path + " and checkpoint.resume: never");
  const auto top = value.toGenericDict();
  const Fields fields(path, "");
  refuse_newer_format(path, fields.whole(top, "format_version"));
  CheckpointContents contents;
  const auto scheduler = fields.dict(top, "scheduler");
  contents.progress = read_progress(top, path, Fields(path, "scheduler.").number(scheduler, "lr_scale"));
  contents.config = core::surrogate_unescaped(fields.text(top, "config"));
  contents.model = fields.tensors(top, "model");
  contents.rng = Fields(path, "progress.").tensors(fields.dict(top, "progress"), "rng");
  if (top.contains("callback_tensors")) {
    const Fields in(path, "callback_tensors.");
    for (const auto& entry : fields.dict(top, "callback_tensors"))
      contents.progress.callback_tensors[entry.key().toStringRef()] =
          in.tensors(top.at("callback_tensors").toGenericDict(), entry.key().toStringRef());
  }
  const auto scaler = fields.dict(top, "scaler");
  if (scaler.contains("scale")) {
    const Fields in(path, "scaler.");
    contents.scaler = {{"scale", at::full({1}, in.number(scaler, "scale"), at::kFloat)},
                       {"growth_tracker", at::full({1}, in.whole(scaler, "_growth_tracker"), at::kInt)},
                       {"skipped", at::full({1}, scaler.contains("skipped_steps") ? in.whole(scaler, "skipped_steps") : 0, at::kLong)}};
  }
  const auto optimizer = fields.at(top, "optimizer");
  contents.restore_optimizer = [optimizer, path](torch::optim::Optimizer& live) { load_optimizer_state_dict(live, optimizer, path); };
  return contents;
}

}  // namespace gputrain::train

#include "unread_settings.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "config_schema.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/model_registry.hpp"

namespace gputrain::train {
namespace {

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& words) {
  if (words.size() <= 1) return core::join(words);
  return core::join(std::vector<std::string>(words.begin(), words.end() - 1)) + " and " + words.back();
}

// Key -> the choices that read it, for the keys of a section that only some of its choices read.
using Readers = std::map<std::string, std::vector<std::string>>;

const Readers& optimizer_readers() {
  static const Readers readers{{"optimizer.momentum", {"sgd"}},
                               {"optimizer.nesterov", {"sgd"}},
                               {"optimizer.betas", {"adam", "adamw"}},
                               {"optimizer.eps", {"adam", "adamw"}}};
  return readers;
}

const Readers& scheduler_readers() {
  static const Readers readers{{"scheduler.step_size", {"step"}},
                               {"scheduler.gamma", {"step", "plateau"}},
                               {"scheduler.patience", {"plateau"}},
                               {"scheduler.min_lr", {"cosine", "plateau"}},
                               {"scheduler.pct_start", {"onecycle"}}};
  return readers;
}

// Which built-in models read each model key (user-registered models may read any).
Readers model_readers() {
  Readers readers;
  for (const auto& name : registered_models())
    if (const auto keys = model_keys_read(name))
      for (const auto& key : *keys) readers[key].push_back(name);
  return readers;
}

std::string shown(const Config& config, const std::string& key) { return value_text(find_field(key)->show(config)); }

bool at_default(const Config& config, const std::string& key) {
  static const Config defaults;
  return shown(config, key) == shown(defaults, key);
}

std::string unread(const Config& config, const std::string& key, const std::string& chosen, const std::vector<std::string>& readers) {
  return key + " is " + shown(config, key) + ", but " + chosen + " does not read it (" +
         (readers.size() == 1 ? "only " + readers.front() + " does" : and_list(readers) + " do") + ")";
}

}  // namespace

std::vector<std::string> unread_settings(const Config& config) {
  std::vector<std::string> out;
  for (const auto& [key, readers] : optimizer_readers())
    if (!at_default(config, key) && std::find(readers.begin(), readers.end(), config.optimizer.name) == readers.end())
      out.push_back(unread(config, key, config.optimizer.name, readers));
  for (const auto& [key, readers] : scheduler_readers())
    if (!at_default(config, key) && std::find(readers.begin(), readers.end(), config.scheduler.name) == readers.end())
      out.push_back(unread(config, key, "scheduler " + config.scheduler.name, readers));
  const auto readers_of_model_keys = model_readers();
  if (!config.model.torchscript.empty()) {
    for (const auto& [key, readers] : readers_of_model_keys)
      if (!at_default(config, key))
        out.push_back(key + " is " + shown(config, key) +
                      ", but a TorchScript model (model.torchscript) is built by its file, not by this key");
  } else if (const auto keys = model_keys_read(config.model.name)) {
    for (const auto& [key, readers] : readers_of_model_keys)
      if (!at_default(config, key) && std::find(keys->begin(), keys->end(), key) == keys->end())
        out.push_back(unread(config, key, config.model.name, readers));
  }
  if (config.data.source != "postgres")
    for (const char* key : {"data.dsn", "data.query", "data.val_query", "data.require_same", "data.streams"})
      if (!at_default(config, key))
        out.push_back(std::string(key) + " is set, but data.source is " + config.data.source + ": only data.source postgres reads it");
  if (config.train.ema_decay == 0 && !at_default(config, "train.ema_every"))
    out.push_back("train.ema_every is " + shown(config, "train.ema_every") +
                  ", but train.ema_decay is 0: there is no moving average to update (set train.ema_decay, e.g. 0.999)");
  if (config.data.missing != "error" && config.data.source != "csv" && config.data.source != "postgres")
    out.push_back("data.missing is " + config.data.missing + ", but data.source is " + config.data.source +
                  ": only csv and postgres data can miss values");
  if (!config.model.init_strict && config.model.init_weights.empty())
    out.push_back("model.init_strict is false, but model.init_weights is not set: there are no weights to load in part");
  if (config.logging.system_every == 0)
    for (const char* key :
         {"logging.alerts.gpu_memory_percent", "logging.alerts.gpu_memory_minutes", "logging.alerts.gpu_utilization_percent",
          "logging.alerts.gpu_utilization_minutes", "logging.alerts.temperature_c", "logging.alerts.memory_growth_gb_per_hour"})
      if (!at_default(config, key))
        out.push_back(std::string(key) + " is " + shown(config, key) +
                      ", but logging.system_every is off: the readings it watches are not taken (set it, e.g. 10s)");
  if (config.train.profile_start_step == 0)
    for (const char* key : {"train.profile.steps", "train.profile.dir"})
      if (!at_default(config, key))
        out.push_back(std::string(key) + " is " + shown(config, key) +
                      ", but train.profile.start_step is 0: no steps are traced (set it, e.g. 20)");
  if (!config.logging.grad_norm && !at_default(config, "logging.alerts.grad_norm"))
    out.push_back("logging.alerts.grad_norm is " + shown(config, "logging.alerts.grad_norm") +
                  ", but logging.grad_norm is false: the norm it watches is not measured");
  if (config.train.batch_size)  // a fixed batch: nothing searches for one
    for (const char* key : {"train.max_batch_size", "sizing.target_fraction", "sizing.objective"})
      if (!at_default(config, key))
        out.push_back(std::string(key) + " is " + shown(config, key) + ", but train.batch_size is " + shown(config, "train.batch_size") +
                      ": only train.batch_size auto reads it");
  // NHWC is a layout of images, and the augmentations act on images: samples of any other shape train as they are.
  if (config.train.channels_last.value_or(false) && config.data.shape.size() != 3)
    out.push_back("train.channels_last is true, but the samples are shaped " + shown(config, "data.shape") +
                  ", not [channels, height, width]: only images have a channels-last layout");
  for (const char* key : {"data.crop_padding", "data.hflip"})
    if (!at_default(config, key) && config.data.shape.size() != 3)
      out.push_back(std::string(key) + " is " + shown(config, key) + ", but the samples are shaped " + shown(config, "data.shape") +
                    ", not [channels, height, width]: only images are cropped and flipped");
  return out;
}

}  // namespace gputrain::train

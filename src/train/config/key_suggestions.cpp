// The suggestions for unknown config keys and for flags that are settings (key_suggestions.hpp).
#include "key_suggestions.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <vector>

#include "config_schema.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {
namespace {

// What other training tools call a setting, for users who bring their habits (and configs) along:
// Lightning's Trainer, Hugging Face's TrainingArguments and Accelerate, timm's and nanoGPT's
// train.py, DeepSpeed's config. Only names whose meaning is the same here; a leaf that already
// matches one of ours ("max_steps") needs no entry.
struct ForeignName {
  const char* name;
  const char* tool;
  const char* key;
};
constexpr ForeignName kForeignNames[] = {
    {"max_epochs", "Lightning", "train.epochs"},
    {"num_train_epochs", "Hugging Face", "train.epochs"},
    {"learning_rate", "Hugging Face", "optimizer.lr"},
    {"output_dir", "Hugging Face", "logging.dir"},
    {"default_root_dir", "Lightning", "logging.dir"},
    {"gradient_clip_val", "Lightning", "train.clip_grad_norm"},
    {"max_grad_norm", "Hugging Face", "train.clip_grad_norm"},
    {"clip_grad", "timm", "train.clip_grad_norm"},
    {"accumulate_grad_batches", "Lightning", "train.grad_accum"},
    {"gradient_accumulation_steps", "Hugging Face", "train.grad_accum"},
    {"per_device_train_batch_size", "Hugging Face", "train.batch_size"},
    {"per_device_eval_batch_size", "Hugging Face", "train.batch_size (validation uses the same)"},
    {"dataloader_num_workers", "Hugging Face", "data.num_workers"},
    {"workers", "timm", "data.num_workers"},
    {"lr_scheduler_type", "Hugging Face", "scheduler.name"},
    {"lr_scheduler", "Lightning", "scheduler.name"},
    {"sched", "timm", "scheduler.name"},
    {"opt", "timm", "optimizer.name"},
    {"optim", "Hugging Face", "optimizer.name"},
    {"save_steps", "Hugging Face", "checkpoint.every_steps"},
    {"save_total_limit", "Hugging Face", "checkpoint.keep_last"},
    {"logging_steps", "Hugging Face", "logging.every_steps"},
    {"log_every_n_steps", "Lightning", "logging.every_steps"},
    {"resume_from_checkpoint", "Hugging Face", "checkpoint.resume"},
    {"ckpt_path", "Lightning", "checkpoint.resume"},
    {"fp16", "Hugging Face", "train.precision: fp16-mixed"},
    {"bf16", "Hugging Face", "train.precision: bf16-mixed"},
    {"amp", "timm", "train.precision: fp16-mixed"},  // timm's --amp-dtype is float16 unless told
    {"label_smoothing_factor", "Hugging Face", "train.label_smoothing"},
    {"smoothing", "timm", "train.label_smoothing"},
    {"early_stopping_patience", "Hugging Face", "train.early_stop_patience"},
    {"early_stopping_threshold", "Hugging Face", "train.early_stop_min_delta"},
    {"patience", "Lightning's EarlyStopping", "train.early_stop_patience"},
    {"min_delta", "Lightning's EarlyStopping", "train.early_stop_min_delta"},
    {"class_weight", "scikit-learn", "train.class_weights"},
    {"mixed_precision", "Accelerate", "train.precision (bf16-mixed, fp16-mixed)"},
    {"gradient_clipping", "DeepSpeed", "train.clip_grad_norm"},
    {"train_micro_batch_size_per_gpu", "DeepSpeed", "train.batch_size"},
    {"grad_clip", "nanoGPT", "train.clip_grad_norm"},
    {"max_iters", "nanoGPT", "train.max_steps"},
    {"warmup_iters", "nanoGPT", "scheduler.warmup_steps"},
    {"out_dir", "nanoGPT", "logging.dir"},
    {"validation_split", "Keras", "data.val_fraction"},
    {"num_classes", "timm", "data.classes"},
    {"drop_rate", "timm", "model.dropout"},
    {"log_interval", "timm", "logging.every_steps"},
    {"gpus", "Lightning", "distributed.nproc_per_node"},
    {"cpu", "Accelerate", "device.name: cpu"},
    {"use_cpu", "Hugging Face", "device.name: cpu"},
    {"no_cuda", "Hugging Face", "device.name: cpu"},
    {"devices", "Lightning", "distributed.nproc_per_node"},
};

// Plain words for a setting that are no key's leaf, or the leaf of another key than the one meant:
// `--steps 100` and `train.steps` mean how long to train, not train.profile.steps.
constexpr std::pair<const char*, const char*> kPlainWords[] = {
    {"steps", "train.max_steps"},
    {"iterations", "train.max_steps"},
    {"iters", "train.max_steps"},
    {"bs", "train.batch_size"},
    {"batch", "train.batch_size"},
    {"val_split", "data.val_fraction"},
    {"val_ratio", "data.val_fraction"},
    {"num_epochs", "train.epochs"},
    {"log_every", "logging.every_steps"},
    {"save_every", "checkpoint.every_steps"},
    {"log_dir", "logging.dir"},
    {"train_path", "data.path"},
    {"train_dir", "data.path"},
    {"val_dir", "data.val_path"},
    {"valid_path", "data.val_path"},
    {"dropout_rate", "model.dropout"},
    {"pretrained", "model.init_weights"},
    {"normalize", "data.standardize"},
    {"accumulate", "train.grad_accum"},
    {"gradient_clip", "train.clip_grad_norm"},
    {"device", "device.name"},
};

// Words for what a section's `name` says: scheduler.type, model.arch.
constexpr const char* kNameWords[] = {"type", "kind", "arch", "architecture", "backbone"};

std::optional<std::string> plain_word(const std::string& word) {
  for (const auto& [plain, key] : kPlainWords)
    if (word == plain) return key;
  return std::nullopt;
}

// The keys whose last part is `leaf` ("lr" -> optimizer.lr), in schema order.
std::vector<std::string> keys_with_leaf(const std::vector<std::string>& keys, const std::string& leaf) {
  std::vector<std::string> found;
  for (const auto& key : keys)
    if (const auto dot = key.rfind('.'); dot != std::string::npos && key.compare(dot + 1, std::string::npos, leaf) == 0)
      found.push_back(key);
  return found;
}

// The names in `names` that start with `prefix`.
std::vector<std::string> keys_starting(const std::vector<std::string>& names, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& name : names)
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  return found;
}

// The keys and every section above one ("train.profile.steps": also "train" and "train.profile").
std::vector<std::string> keys_and_sections(const std::vector<std::string>& keys) {
  std::vector<std::string> names = keys;
  for (const auto& key : keys)
    for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) names.push_back(key.substr(0, dot));
  return names;
}

}  // namespace

// The best guess for a key nobody declared: the key in another case ("Train.Epochs": YAML's keys
// are case-sensitive), else another tool's name for one of ours ("max_epochs" ->
// "train.epochs"), else the same leaf in another section ("train.lr" -> "optimizer.lr"), else the
// closest leaf in its own section ("data.sorce" -> "data.source"), else the closest spelling among
// all keys and sections ("trian" -> "train").
std::string did_you_mean(const std::string& key) {
  const auto keys = config_keys();
  const auto dot = key.rfind('.');
  const std::string section = dot == std::string::npos ? "" : key.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? key : key.substr(dot + 1);
  const auto names = keys_and_sections(keys);
  for (const auto& known : names)
    if (core::lower(known) == core::lower(key)) return "; keys are lower case: did you mean '" + known + "'?";
  for (const auto& foreign : kForeignNames)
    if (leaf == foreign.name) return "; " + std::string(foreign.tool) + "'s " + foreign.name + " is " + foreign.key + " here";
  // A whole section written inside another one ("train.scheduler: cosine").
  if (!section.empty() && std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return k.rfind(leaf + ".", 0) == 0; })) {
    if (std::find(keys.begin(), keys.end(), leaf + ".name") != keys.end())
      return "; " + leaf + " is a section of its own: did you mean '" + leaf + ".name'?";
    return "; " + leaf + " is a section of its own, at the top level";
  }
  // A plain word means its key at the top, in train and in its key's own section (data.val_split).
  if (const auto plain = plain_word(leaf); plain && (section.empty() || section == "train" || plain->rfind(section + ".", 0) == 0))
    return "; did you mean '" + *plain + "'?";
  if (std::find(std::begin(kNameWords), std::end(kNameWords), leaf) != std::end(kNameWords) &&
      std::find(keys.begin(), keys.end(), section + ".name") != keys.end())
    return "; did you mean '" + section + ".name'?";
  if (key == "checkpoint.path") return "; did you mean 'checkpoint.dir' (where checkpoints go) or 'checkpoint.resume' (one to go on from)?";
  if (const auto same_leaf = keys_with_leaf(keys, leaf); !same_leaf.empty()) return "; did you mean '" + same_leaf.front() + "'?";
  std::vector<std::string> siblings;
  for (const auto& known : keys)
    if (const auto kdot = known.rfind('.'); kdot != std::string::npos && known.substr(0, kdot) == section)
      siblings.push_back(known.substr(kdot + 1));
  if (auto best = core::closest_match(leaf, siblings)) return "; did you mean '" + section + "." + *best + "'?";
  if (const auto longer = keys_starting(siblings, leaf + "_"); longer.size() == 1)  // "logging.every" -> every_steps
    return "; did you mean '" + section + "." + longer.front() + "'?";
  if (!siblings.empty()) return "";  // in a known section, the remedy lists that section's keys instead
  if (auto best = core::closest_match(key, names)) return "; did you mean '" + *best + "'?";
  return "";
}

std::string section_keys(const std::string& section) {
  std::string list;
  for (const auto& key : config_keys()) {
    if (key.rfind(section + ".", 0) != 0) continue;
    list += (list.empty() ? "" : ", ") + key.substr(section.size() + 1);
  }
  return list;
}

bool is_section(const std::string& prefix) {
  for (const auto& key : config_keys())
    if (key.rfind(prefix + ".", 0) == 0) return true;
  return false;
}

// What to do about an unknown key: in a known section, the keys it does have; at the top, the
// sections; else where all keys are.
std::string unknown_key_remedy(const std::string& key, const std::string& elsewhere) {
  const auto dot = key.rfind('.');
  if (dot != std::string::npos && is_section(key.substr(0, dot)))
    return "the keys of " + key.substr(0, dot) + " are: " + section_keys(key.substr(0, dot)) + " (docs/configuration.md)";
  if (dot != std::string::npos) return elsewhere;
  std::vector<std::string> sections;
  for (const auto& known : config_keys()) {
    const std::string top = known.substr(0, known.find('.'));
    if (std::find(sections.begin(), sections.end(), top) == sections.end()) sections.push_back(top);
  }
  return "the top-level sections are: " + core::join(sections) + " (docs/configuration.md)";
}

namespace {

// The key a flag's name (dashes read as underscores) is ours for: the key itself, a plain word
// for it, or the one key with that leaf.
std::optional<std::string> our_key(const std::string& name, const std::vector<std::string>& keys) {
  if (std::find(keys.begin(), keys.end(), name) != keys.end()) return name;
  if (const auto plain = plain_word(name)) return plain;
  const auto same_leaf = keys_with_leaf(keys, name);
  return same_leaf.size() == 1 ? std::optional(same_leaf.front()) : std::nullopt;
}

// A boolean key (train.deterministic): a flag given bare is a switch turned on.
bool is_boolean_key(const std::string& key) {
  const Field* field = find_field(key);
  const auto shown = field ? field->show(Config{}) : YAML::Node();
  return shown.IsScalar() && (shown.Scalar() == "true" || shown.Scalar() == "false");
}

// Flags of other tools that are no setting here, each with what does its work.
constexpr std::pair<const char*, const char*> kFlagsOfNoSetting[] = {
    {"allow_cpu",
     "--allow-cpu is quick-train's: gputrain train runs on the CPU by itself when no GPU is visible (device.name: auto), and "
     "with one there, --set device.name=cpu (docs/configuration.md)"},
    {"compile",
     "gputrain compiles nothing (its step is C++): on a GPU it captures the step in a CUDA graph by itself, as "
     "torch.compile's reduce-overhead mode does (train.cuda_graphs: auto); --set train.cuda_graphs=on makes a step it cannot "
     "capture an error (docs/configuration.md)"},
    {"profile",
     "a run traces its steps with --set train.profile.start_step=20 (train.profile.steps, train.profile.dir); a step's time "
     "and memory: gputrain profile --step CONFIG (docs/profiling.md)"},
};

}  // namespace

std::string flag_as_setting(const std::string& flag, const std::string& value) {
  const auto start = flag.find_first_not_of('-');
  if (start == std::string::npos || start == 0) return "";
  std::string name = flag.substr(start);
  std::replace(name.begin(), name.end(), '-', '_');
  const std::string given = value.empty() ? "VALUE" : value;
  const auto set_key = [&](const std::string& key) {
    static const std::set<std::string> switch_words = {"true", "false", "on", "off", "yes", "no"};
    const bool bare_switch = is_boolean_key(key) && !switch_words.count(core::lower(value));  // --deterministic [CONFIG]
    return "a setting is given with --set: --set " + key + "=" + (bare_switch ? "true" : given) + " (docs/configuration.md)";
  };
  const auto keys = config_keys();
  if (name == "torch_compile") name = "compile";  // Hugging Face's
  for (const auto& [flag_name, remedy] : kFlagsOfNoSetting)
    if (name == flag_name) return remedy;
  if (name == "resume" && value.empty())  // a switch in other tools; here the default
    return "a run resumes by itself (checkpoint.resume: auto): run the same command again; from a file of your choice: --set "
           "checkpoint.resume=PATH (docs/configuration.md)";
  if (std::find(keys.begin(), keys.end(), name) != keys.end()) return set_key(name);
  for (const auto& foreign : kForeignNames) {
    if (name != foreign.name) continue;
    // "train.precision: fp16-mixed" names the value too; "train.batch_size (validation ...)" only the key.
    const std::string said = foreign.key, key = said.substr(0, said.find_first_of(" :"));
    const auto colon = said.find(": ");
    const std::string set = "--set " + key + "=" + (colon == std::string::npos ? given : said.substr(colon + 2));
    return std::string(foreign.tool) + "'s --" + foreign.name + " is " + key + " here: " + set + " (docs/configuration.md)";
  }
  if (const auto key = our_key(name, keys)) return set_key(*key);
  // --no-shuffle, --no-cuda-graphs: a switch turned off is the key set to off (a boolean's or a mode's).
  if (const auto key = name.rfind("no_", 0) == 0 && value.empty() ? our_key(name.substr(3), keys) : std::nullopt)
    return "a setting is given with --set: --set " + *key + "=off (docs/configuration.md)";
  return "";
}

}  // namespace gputrain::train

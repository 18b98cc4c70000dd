// The schema: every key, its type, its allowed values. Defaults live in config.hpp's structs.
#include "config_schema.hpp"

#include "config_fields.hpp"
#include "data/postgres/dsn.hpp"
#include "param_groups_field.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "config_paths.hpp"
#include "gputrain/core/duration.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/device/select.hpp"
#include "gputrain/train/model_registry.hpp"

namespace gputrain::train {
namespace {

// The largest float32: rates, norms and scales become float tensors on the device, and a larger
// value stopped the first step with LibTorch's "cannot be converted to type float without overflow".
constexpr double kFloatMax = 3.4e38;

using namespace fields;

// none, balanced, or one weight per class.
Field class_weights_field() {
  return {"train.class_weights",
          [](Config& c, const FieldValue& v) {
            const std::string allowed = "none, balanced, or a list of numbers >= 0, one per class (e.g. [1, 4.5])";
            auto& weights = c.train.class_weights;
            if (v.node.IsNull() || (v.node.IsScalar() && v.node.Scalar() == "none")) {
              weights = {};
            } else if (v.node.IsScalar() && v.node.Scalar() == "balanced") {
              weights = {true, {}};
            } else if (v.node.IsSequence() && v.node.size() > 0) {
              weights = {false, parse_double_list(v, 0.0, kFloatMax)};
            } else {
              reject(v, found_text(v.node), allowed, v.node.IsScalar() ? guess_choice(v.node.Scalar(), {"none", "balanced"}) : "");
            }
          },
          [](const Config& c) {
            const auto& weights = c.train.class_weights;
            if (weights.given.empty()) return YAML::Node(weights.balanced ? "balanced" : "none");
            YAML::Node list(YAML::NodeType::Sequence);
            for (double w : weights.given) list.push_back(shortest(w));
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

Field precision_field() {
  return {
      "train.precision",
      [](Config& c, const FieldValue& v) {
        const std::vector<std::string> allowed = {"fp32", "fp16-mixed", "bf16-mixed"};
        if (v.node.IsScalar() &&
            (core::lower(v.node.Scalar()) == "amp" || core::lower(v.node.Scalar()) == "mixed"))  // timm's --amp, "mixed precision"
          reject(v, found_text(v.node), "one of " + core::join(allowed),
                 "; mixed precision is bf16-mixed (on GPUs since the A100; no loss scaling) or fp16-mixed (with a GradScaler)");
        const auto text = parse_choice(v, allowed);
        c.train.precision = text == "fp16-mixed" ? Precision::fp16_mixed : text == "bf16-mixed" ? Precision::bf16_mixed : Precision::fp32;
      },
      [](const Config& c) { return YAML::Node(to_string(c.train.precision)); }};
}

Field betas_field() {
  return {"optimizer.betas",
          [](Config& c, const FieldValue& v) {
            const std::string allowed = "two numbers in [0, 1), e.g. [0.9, 0.999]";
            if (!v.node.IsSequence() || v.node.size() != 2) reject(v, found_text(v.node), allowed);
            std::vector<double> betas;
            for (const auto& item : v.node) {
              const double b = parse_double(FieldValue{item, v.where, v.key}, 0.0, 1.0);
              if (b >= 1.0) reject(v, "'" + item.Scalar() + "'", allowed);
              betas.push_back(b);
            }
            c.optimizer.betas = betas;
          },
          [](const Config& c) {
            YAML::Node list(YAML::NodeType::Sequence);
            for (double b : c.optimizer.betas) list.push_back(shortest(b));
            list.SetStyle(YAML::EmitterStyle::Flow);
            return list;
          }};
}

Field model_name_field() {
  return {"model.name",
          [](Config& c, const FieldValue& v) {
            auto names = registered_models();
            names.insert(names.begin(), "auto");
            c.model.name = parse_choice(v, names);
          },
          [](const Config& c) { return YAML::Node(c.model.name); }};
}

Field device_name_field() {
  return {"device.name",
          [](Config& c, const FieldValue& v) {
            const std::string allowed = "auto, cpu, cuda or cuda:N";
            const std::string text = scalar(v, allowed);
            if (!device::is_device_spec(text)) {
              static const std::vector<std::pair<std::string, std::string>> others = {{"mps", "Apple's GPUs"}, {"xpu", "Intel's GPUs"},
                                                                                      {"xla", "TPUs"},         {"tpu", "TPUs"},
                                                                                      {"hip", "AMD's GPUs"},   {"npu", "Ascend NPUs"}};
              for (const auto& [name, what] : others)
                if (core::lower(text).rfind(name, 0) == 0)
                  reject(v, found_text(v.node), allowed,
                         "; '" + name + "' is PyTorch's device for " + what +
                             ", which gputrain does not train on: NVIDIA GPUs (cuda) and CPUs");
              const auto near = device::near_device_spec(text);
              reject(v, found_text(v.node), allowed, near.empty() ? "" : "; did you mean '" + near + "'?");
            }
            c.device.name = text;
          },
          [](const Config& c) { return YAML::Node(c.device.name); }};
}

// A size in the largest unit that writes it exactly: 8GiB, 1536MiB, 1000 (bytes).
std::string size_text(std::uint64_t bytes) {
  if (bytes == 0) return "none";
  for (const auto& [unit, name] : {std::pair{core::kGiB, "GiB"}, std::pair{core::kMiB, "MiB"}, std::pair{core::kKiB, "KiB"}})
    if (bytes % unit == 0) return std::to_string(bytes / unit) + name;
  return std::to_string(bytes);
}

Field max_memory_field() {
  return {"device.max_memory",
          [](Config& c, const FieldValue& v) {
            const std::string allowed = "a size such as 8GiB, 512MiB or 8GB, or none";
            const std::string text = scalar(v, allowed);
            if (text == "none" || text == "0") {
              c.device.max_memory = 0;
              return;
            }
            const auto bytes = core::parse_bytes(text);
            if (!bytes || *bytes < core::kMiB) reject(v, found_text(v.node), allowed + " (at least 1MiB)", bytes ? "" : size_guess(text));
            c.device.max_memory = *bytes;
          },
          [](const Config& c) { return YAML::Node(size_text(c.device.max_memory)); }};
}

// checkpoint.resume: auto, never or a file. Other tools' words for the first two (Hugging Face's
// `resume_from_checkpoint: true`, Lightning's `ckpt_path: last`) and `best` would be looked for
// as files, and said not to exist only once the data had opened.
Field resume_field() {
  auto field = path_field(
      "checkpoint.resume", [](auto& c) -> auto& { return c.checkpoint.resume; }, "auto, never, or a checkpoint file", false);
  field.assign = [assign = field.assign](Config& c, const FieldValue& v) {
    assign(c, v);
    const auto& value = c.checkpoint.resume;
    const std::string word = core::lower(value);
    std::error_code ec;
    if (std::filesystem::exists(value, ec)) return;
    const auto said = [&](const std::string& what, const std::string& fix) {
      throw UsageError(v.where + ": checkpoint.resume '" + value + "' is " + what, fix + " (docs/checkpoints.md)");
    };
    if (word == "true" || word == "yes" || word == "on" || word == "last" || word == "latest" || word == "newest")
      said("no file here: going on from the newest checkpoint of the run folder is checkpoint.resume: auto, the default",
           "set checkpoint.resume: auto (or leave it out)");
    if (word == "false" || word == "no" || word == "off" || word == "none")
      said("no file here: starting over, whatever checkpoints the run folder holds, is checkpoint.resume: never",
           "set checkpoint.resume: never");
    if (word == "best")
      said("no file here: a run's best checkpoint is the file best.pt in its checkpoint folder",
           "set checkpoint.resume: runs/NAME/checkpoints/best.pt");
  };
  return field;
}

// A duration with its unit (45m, 10s, 1h30m), or `none_word` (and 0), both kept as 0 seconds.
// A number alone is refused: it means minutes to SLURM and seconds to Lightning.
template <typename Get>
Field duration_field(std::string key, Get get, const std::string& examples, const std::string& none_word, double min_seconds) {
  return {std::move(key),
          [=](Config& c, const FieldValue& v) {
            const std::string allowed = "a duration such as " + examples + ", or " + none_word;
            const std::string text = scalar(v, allowed);
            if (text == none_word || text == "0") {
              get(c) = 0;
              return;
            }
            const auto seconds = core::parse_duration(text);
            if (!seconds || (*seconds > 0 && *seconds < min_seconds)) {
              const bool bare = text.find_first_not_of("0123456789.") == std::string::npos;
              reject(v, found_text(v.node),
                     allowed + (min_seconds > 0 && seconds ? " (" + core::duration_text(min_seconds) + " at least)" : ""),
                     bare      ? "; a number alone has no unit: write " + text + "m or " + text + "s"
                     : seconds ? ""
                               : duration_guess(text));
            }
            get(c) = *seconds;  // "0s" is none, as 0 is
          },
          [=](const Config& c) { return YAML::Node(get(c) > 0 ? core::duration_text(get(c)) : none_word); }};
}

// The model.* keys.
std::vector<Field> model_fields() {
  // clang-format off
  return {
    model_name_field(),
    path_field("model.torchscript", [](auto& c) -> auto& { return c.model.torchscript; }, "a path to a TorchScript .pt file"),
    path_field("model.init_weights", [](auto& c) -> auto& { return c.model.init_weights; },
               "a path to a .safetensors file, a torch.save state_dict or a checkpoint"),
    bool_field("model.init_strict", [](auto& c) -> auto& { return c.model.init_strict; }),
    int_list_field("model.hidden", [](auto& c) -> auto& { return c.model.hidden; }, 1, true),
    choice_field("model.activation", [](auto& c) -> auto& { return c.model.activation; }, {"relu", "gelu", "silu", "tanh"}),
    double_field("model.dropout", [](auto& c) -> auto& { return c.model.dropout; }, 0.0, 0.99),
    choice_field("model.norm", [](auto& c) -> auto& { return c.model.norm; }, {"none", "batch", "layer"}),
    int_field("model.width", [](auto& c) -> auto& { return c.model.width; }, 1),
    choice_field("model.stem", [](auto& c) -> auto& { return c.model.stem; }, {"cifar", "imagenet"}),
    int_field("model.layers", [](auto& c) -> auto& { return c.model.layers; }, 1),
    int_field("model.d_model", [](auto& c) -> auto& { return c.model.d_model; }, 1),
    int_field("model.heads", [](auto& c) -> auto& { return c.model.heads; }, 1),
    int_field("model.ff_dim", [](auto& c) -> auto& { return c.model.ff_dim; }, 1),
    bool_field("model.norm_first", [](auto& c) -> auto& { return c.model.norm_first; }),
    bool_field("model.sync_batch_norm", [](auto& c) -> auto& { return c.model.sync_batch_norm; }),
  };
  // clang-format on
}

// The data.* keys.
std::vector<Field> data_fields() {
  // clang-format off
  return {
    choice_field("data.source", [](auto& c) -> auto& { return c.data.source; }, data::source_names()),
    choice_field("data.task", [](auto& c) -> auto& { return c.data.task; }, {"classification", "regression"}),
    path_field("data.path", [](auto& c) -> auto& { return c.data.path; }, "a path to the data's file or folder"),
    name_or_names_field("data.labels", [](auto& c) -> auto& { return c.data.labels; },
                        "a file (npy), key (npz, safetensors), or column or list of columns (csv)"),
    string_list_field("data.features", [](auto& c) -> auto& { return c.data.features; }),
    string_list_field("data.exclude", [](auto& c) -> auto& { return c.data.exclude; }),
    string_list_field("data.categorical", [](auto& c) -> auto& { return c.data.categorical; }),
    choice_field("data.missing", [](auto& c) -> auto& { return c.data.missing; }, {"error", "drop", "mean", "zero"}),
    path_field("data.val_path", [](auto& c) -> auto& { return c.data.val_path; }, "a path to the validation data"),
    path_field("data.val_labels", [](auto& c) -> auto& { return c.data.val_labels; }, "a path to the validation labels' .npy file"),
    // Shown (config.yaml, logs) with its password masked: a password belongs in ~/.pgpass or PGPASSWORD.
    {"data.dsn", [](Config& c, const FieldValue& v) { c.data.dsn = v.node.IsNull() ? "" : parse_string(v, "a libpq connection string"); },
     [](const Config& c) { return YAML::Node(data::postgres::mask_password(c.data.dsn)); }},
    optional_string_field("data.query", [](auto& c) -> auto& { return c.data.query; }, "an SQL query"),
    optional_string_field("data.val_query", [](auto& c) -> auto& { return c.data.val_query; }, "an SQL query"),
    bool_field("data.require_same", [](auto& c) -> auto& { return c.data.require_same; }),
    // More connections than a server's default max_connections (100) leaves to others would be rude.
    int_or_auto_field("data.streams", [](auto& c) -> auto& { return c.data.streams; }, 1, 32),
    {"data.image_size", [](Config& c, const FieldValue& v) { c.data.image_size = parse_image_size(v); },
     [](const Config& c) { return flow_list(c.data.image_size); }},
    int_list_field("data.shape", [](auto& c) -> auto& { return c.data.shape; }, 1, false),
    int_or_auto_field("data.classes", [](auto& c) -> auto& { return c.data.classes; }, 2),
    int_field("data.outputs", [](auto& c) -> auto& { return c.data.outputs; }, 1),
    int_field("data.samples", [](auto& c) -> auto& { return c.data.samples; }, 1),
    int_field("data.val_samples", [](auto& c) -> auto& { return c.data.val_samples; }, 0),
    double_field("data.val_fraction", [](auto& c) -> auto& { return c.data.val_fraction; }, 0.0, 0.99),
    bool_field("data.shuffle", [](auto& c) -> auto& { return c.data.shuffle; }),
    bool_field("data.drop_last", [](auto& c) -> auto& { return c.data.drop_last; }),
    choice_field("data.cache", [](auto& c) -> auto& { return c.data.cache; }, {"auto", "vram", "ram", "none"}),
    // Loader threads: past a thousand they exhaust the process's threads (and the machine's) before any help.
    int_or_auto_field("data.num_workers", [](auto& c) -> auto& { return c.data.num_workers; }, 0, 1024),
    int_field("data.prefetch", [](auto& c) -> auto& { return c.data.prefetch; }, 1, 64),
    bool_field("data.pin_memory", [](auto& c) -> auto& { return c.data.pin_memory; }),
    double_field("data.timeout", [](auto& c) -> auto& { return c.data.timeout; }, 1.0),
    double_list_field("data.mean", [](auto& c) -> auto& { return c.data.mean; }, -1e9, 1e9),
    double_list_field("data.std", [](auto& c) -> auto& { return c.data.std; }, 1e-12, kFloatMax),
    bool_field("data.standardize", [](auto& c) -> auto& { return c.data.standardize; }),
    bool_field("data.standardize_targets", [](auto& c) -> auto& { return c.data.standardize_targets; }),
    int_field("data.crop_padding", [](auto& c) -> auto& { return c.data.crop_padding; }, 0),
    bool_field("data.hflip", [](auto& c) -> auto& { return c.data.hflip; }),
  };
  // clang-format on
}

// The train.* keys.
std::vector<Field> train_fields() {
  // clang-format off
  return {
    int_field("train.epochs", [](auto& c) -> auto& { return c.train.epochs; }, 1),
    int_field("train.max_steps", [](auto& c) -> auto& { return c.train.max_steps; }, 0),
    duration_field("train.max_time", [](auto& c) -> auto& { return c.train.max_time; }, "45m, 2h, 1h30m, 1d or 11:30:00 (H:MM:SS)", "none", 0),
    int_field("train.early_stop_patience", [](auto& c) -> auto& { return c.train.early_stop_patience; }, 0),
    double_field("train.early_stop_min_delta", [](auto& c) -> auto& { return c.train.early_stop_min_delta; }, 0.0),
    int_or_auto_field("train.batch_size", [](auto& c) -> auto& { return c.train.batch_size; }, 1),
    int_field("train.max_batch_size", [](auto& c) -> auto& { return c.train.max_batch_size; }, 0),
    int_field("train.grad_accum", [](auto& c) -> auto& { return c.train.grad_accum; }, 1),
    precision_field(),
    bool_field("train.tf32", [](auto& c) -> auto& { return c.train.tf32; }),
    bool_or_auto_field("train.channels_last", [](auto& c) -> auto& { return c.train.channels_last; }),
    bool_field("train.cudnn_benchmark", [](auto& c) -> auto& { return c.train.cudnn_benchmark; }),
    choice_field("train.cuda_graphs", [](auto& c) -> auto& { return c.train.cuda_graphs; }, {"auto", "on", "off"}),
    double_field("train.clip_grad_norm", [](auto& c) -> auto& { return c.train.clip_grad_norm; }, 0.0, kFloatMax),
    double_field("train.label_smoothing", [](auto& c) -> auto& { return c.train.label_smoothing; }, 0.0, 1.0),
    class_weights_field(),
    int_field("train.seed", [](auto& c) -> auto& { return c.train.seed; }, 0),
    bool_field("train.deterministic", [](auto& c) -> auto& { return c.train.deterministic; }),
    string_list_field("train.freeze", [](auto& c) -> auto& { return c.train.freeze; }),
    flag_or_names_field("train.activation_checkpointing", [](auto& c) -> auto& { return c.train.activation_checkpointing; },
                        "true, false, or a list of block names, e.g. [layer3, layer4]"),
    double_field("train.ema_decay", [](auto& c) -> auto& { return c.train.ema_decay; }, 0.0, 0.999999),
    int_field("train.ema_every", [](auto& c) -> auto& { return c.train.ema_every; }, 1),
    int_field("train.profile.start_step", [](auto& c) -> auto& { return c.train.profile_start_step; }, 0),
    int_field("train.profile.steps", [](auto& c) -> auto& { return c.train.profile_steps; }, 1, 1000),
    optional_string_field("train.profile.dir", [](auto& c) -> auto& { return c.train.profile_dir; }, "a folder for the trace"),
  };
  // clang-format on
}

// The optimizer.* keys.
std::vector<Field> optimizer_fields() {
  // clang-format off
  return {
    choice_field("optimizer.name", [](auto& c) -> auto& { return c.optimizer.name; }, {"sgd", "adam", "adamw"}),
    double_field("optimizer.lr", [](auto& c) -> auto& { return c.optimizer.lr; }, 0.0, kFloatMax),
    double_field("optimizer.momentum", [](auto& c) -> auto& { return c.optimizer.momentum; }, 0.0, 1.0),
    bool_field("optimizer.nesterov", [](auto& c) -> auto& { return c.optimizer.nesterov; }),
    double_field("optimizer.weight_decay", [](auto& c) -> auto& { return c.optimizer.weight_decay; }, 0.0, kFloatMax),
    betas_field(),
    double_field("optimizer.eps", [](auto& c) -> auto& { return c.optimizer.eps; }, 0.0, kFloatMax),
    param_groups_field(),
  };
  // clang-format on
}

// The scheduler.* keys.
std::vector<Field> scheduler_fields() {
  // clang-format off
  return {
    choice_field("scheduler.name", [](auto& c) -> auto& { return c.scheduler.name; }, {"none", "step", "cosine", "onecycle", "plateau"}),
    int_field("scheduler.warmup_steps", [](auto& c) -> auto& { return c.scheduler.warmup_steps; }, 0),
    int_field("scheduler.step_size", [](auto& c) -> auto& { return c.scheduler.step_size; }, 1),
    double_field("scheduler.gamma", [](auto& c) -> auto& { return c.scheduler.gamma; }, 0.0, 1.0),
    int_field("scheduler.patience", [](auto& c) -> auto& { return c.scheduler.patience; }, 0),
    double_field("scheduler.min_lr", [](auto& c) -> auto& { return c.scheduler.min_lr; }, 0.0, kFloatMax),
    double_field("scheduler.pct_start", [](auto& c) -> auto& { return c.scheduler.pct_start; }, 0.0, 1.0),
  };
  // clang-format on
}

// The checkpoint.* keys.
std::vector<Field> checkpoint_fields() {
  // clang-format off
  return {
    path_field("checkpoint.dir", [](auto& c) -> auto& { return c.checkpoint.dir; }, "a directory path"),
    int_field("checkpoint.every_steps", [](auto& c) -> auto& { return c.checkpoint.every_steps; }, 0),
    int_field("checkpoint.every_epochs", [](auto& c) -> auto& { return c.checkpoint.every_epochs; }, 0),
    int_field("checkpoint.keep_last", [](auto& c) -> auto& { return c.checkpoint.keep_last; }, 1),
    choice_field("checkpoint.best_metric", [](auto& c) -> auto& { return c.checkpoint.best_metric; }, {"val_loss", "val_accuracy", "val_balanced_accuracy", "val_mse", "val_mae", "val_loss_ema", "val_accuracy_ema", "val_balanced_accuracy_ema", "val_mse_ema", "val_mae_ema", "none"}),
    choice_field("checkpoint.best_mode", [](auto& c) -> auto& { return c.checkpoint.best_mode; }, {"auto", "min", "max"}),
    resume_field(),
  };
  // clang-format on
}

// The logging.* keys.
std::vector<Field> logging_fields() {
  // clang-format off
  return {
    path_field("logging.dir", [](auto& c) -> auto& { return c.logging.dir; }, "a directory path", false),
    int_field("logging.every_steps", [](auto& c) -> auto& { return c.logging.every_steps; }, 1),
    bool_field("logging.jsonl", [](auto& c) -> auto& { return c.logging.jsonl; }),
    bool_field("logging.tensorboard", [](auto& c) -> auto& { return c.logging.tensorboard; }),
    choice_field("logging.progress", [](auto& c) -> auto& { return c.logging.progress; }, {"auto", "bar", "lines", "off"}),
    bool_field("logging.grad_norm", [](auto& c) -> auto& { return c.logging.grad_norm; }),
    int_field("logging.histograms_every", [](auto& c) -> auto& { return c.logging.histograms_every; }, 0),
    duration_field("logging.system_every", [](auto& c) -> auto& { return c.logging.system_every; }, "10s, 30s or 1m", "off", 1),
    number_or_off_field("logging.alerts.gpu_memory_percent", [](auto& c) -> auto& { return c.logging.alerts.gpu_memory_percent; }, 0.0, 100.0),
    double_field("logging.alerts.gpu_memory_minutes", [](auto& c) -> auto& { return c.logging.alerts.gpu_memory_minutes; }, 0.0),
    number_or_off_field("logging.alerts.gpu_utilization_percent", [](auto& c) -> auto& { return c.logging.alerts.gpu_utilization_percent; }, 0.0, 100.0),
    double_field("logging.alerts.gpu_utilization_minutes", [](auto& c) -> auto& { return c.logging.alerts.gpu_utilization_minutes; }, 0.0),
    number_or_off_field("logging.alerts.temperature_c", [](auto& c) -> auto& { return c.logging.alerts.temperature_c; }, 0.0),
    number_or_off_field("logging.alerts.data_wait_ms", [](auto& c) -> auto& { return c.logging.alerts.data_wait_ms; }, 0.0),
    number_or_off_field("logging.alerts.no_improvement_epochs", [](auto& c) -> auto& { return c.logging.alerts.no_improvement_epochs; }, 1.0),
    number_or_off_field("logging.alerts.grad_norm", [](auto& c) -> auto& { return c.logging.alerts.grad_norm; }, 0.0),
    number_or_off_field("logging.alerts.memory_growth_gb_per_hour", [](auto& c) -> auto& { return c.logging.alerts.memory_growth_gb_per_hour; }, 0.0),
    bool_field("logging.alerts.communication_error", [](auto& c) -> auto& { return c.logging.alerts.communication_error; }),
    {"logging.mlflow.tracking_uri", [](Config& c, const FieldValue& v) { c.logging.mlflow.tracking_uri = v.node.IsNull() ? "" : parse_string(v, "an MLflow tracking server's address, e.g. http://127.0.0.1:5000"); },
     [](const Config& c) { return YAML::Node(data::postgres::mask_password(c.logging.mlflow.tracking_uri)); }},
    optional_string_field("logging.mlflow.experiment", [](auto& c) -> auto& { return c.logging.mlflow.experiment; }, "an MLflow experiment's name"),
    optional_string_field("logging.mlflow.run_name", [](auto& c) -> auto& { return c.logging.mlflow.run_name; }, "a name for the MLflow run"),
    duration_field("logging.mlflow.timeout", [](auto& c) -> auto& { return c.logging.mlflow.timeout; }, "10s or 1m", "none", 1),
  };
  // clang-format on
}

// The sizing.* keys.
std::vector<Field> sizing_fields() {
  // clang-format off
  return {
    double_field("sizing.target_fraction", [](auto& c) -> auto& { return c.sizing.target_fraction; }, 0.05, 1.0),
    choice_field("sizing.objective", [](auto& c) -> auto& { return c.sizing.objective; }, {"memory", "throughput"}),
  };
  // clang-format on
}

// The oom.* keys.
std::vector<Field> oom_fields() {
  // clang-format off
  return {
    int_field("oom.max_halvings", [](auto& c) -> auto& { return c.oom.max_halvings; }, 0, 20),
    int_field("oom.min_micro_batch", [](auto& c) -> auto& { return c.oom.min_micro_batch; }, 1),
    int_field("oom.regrow_after", [](auto& c) -> auto& { return c.oom.regrow_after; }, 0),
  };
  // clang-format on
}

// The device.* keys.
std::vector<Field> device_fields() {
  // clang-format off
  return {
    device_name_field(),
    max_memory_field(),
  };
  // clang-format on
}

// The distributed.* keys.
std::vector<Field> distributed_fields() {
  // clang-format off
  return {
    choice_field("distributed.backend", [](auto& c) -> auto& { return c.distributed.backend; }, {"auto", "nccl", "mpi", "gloo"}),
    int_field("distributed.nproc_per_node", [](auto& c) -> auto& { return c.distributed.nproc_per_node; }, 0, 1024),
    int_field("distributed.nnodes", [](auto& c) -> auto& { return c.distributed.nnodes; }, 1, 100000),
    int_field("distributed.node_rank", [](auto& c) -> auto& { return c.distributed.node_rank; }, 0, 99999),
    optional_string_field("distributed.master_addr", [](auto& c) -> auto& { return c.distributed.master_addr; }, "a host name or address"),
    int_field("distributed.master_port", [](auto& c) -> auto& { return c.distributed.master_port; }, 0, 65535),
    double_field("distributed.timeout", [](auto& c) -> auto& { return c.distributed.timeout; }, 1.0),
    double_field("distributed.bucket_mb", [](auto& c) -> auto& { return c.distributed.bucket_mb; }, 0.001, 1048576),
    double_field("distributed.first_bucket_mb", [](auto& c) -> auto& { return c.distributed.first_bucket_mb; }, 0.001, 1048576),
    choice_field("distributed.grad_dtype", [](auto& c) -> auto& { return c.distributed.grad_dtype; }, {"none", "bf16", "fp16"}),
    bool_field("distributed.shard_optimizer", [](auto& c) -> auto& { return c.distributed.shard_optimizer; }),
  };
  // clang-format on
}

// Every key, section by section, in the order --print-config shows them.
std::vector<Field> make_schema() {
  std::vector<Field> all;
  for (auto section : {model_fields(), data_fields(), train_fields(), optimizer_fields(), scheduler_fields(), checkpoint_fields(),
                       logging_fields(), sizing_fields(), oom_fields(), device_fields(), distributed_fields()})
    for (auto& field : section) all.push_back(std::move(field));
  return all;
}

}  // namespace

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = make_schema();
  return fields;
}

const Field* find_field(const std::string& key) {
  for (const auto& field : schema())
    if (field.key == key) return &field;
  return nullptr;
}

std::string value_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

}  // namespace gputrain::train

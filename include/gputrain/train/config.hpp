#pragma once
// train::Config: the resolved training configuration. Defaults < config files (later wins) <
// `--set a.b=c` overrides; every key is documented in docs/configuration.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::train {

/// fp32, or autocast to fp16 (with a GradScaler) or bf16 (no scaler needed).
enum class Precision { fp32, fp16_mixed, bf16_mixed };

/// "fp32", "fp16-mixed", "bf16-mixed".
std::string to_string(Precision precision);

struct ModelConfig {
  std::string name = "auto";                      ///< a registered model (see model_registry.hpp), or auto: chosen by the samples' shape
  std::string torchscript;                        ///< a scripted module file; replaces `name` when set
  std::string init_weights;                       ///< safetensors, a torch.save state_dict or a checkpoint to start from
  bool init_strict = true;                        ///< false: load init_weights' tensors that fit, leave the rest at random
  std::vector<std::int64_t> hidden = {256, 256};  ///< MLP hidden layer widths
  std::string activation = "relu";                ///< relu, gelu, silu, tanh (MLP hidden layers, transformer feed-forward)
  double dropout = 0.0;                           ///< MLP, CNN and transformer dropout probability
  std::string norm = "none";                      ///< MLP normalisation: none, batch, layer
  std::int64_t width = 32;                        ///< small_cnn: channels of the first conv block
  std::string stem = "cifar";                     ///< ResNets: cifar (3x3, no pool) or imagenet (7x7 + pool)
  std::int64_t layers = 2;                        ///< transformer encoder layers
  std::int64_t d_model = 128;                     ///< transformer width
  std::int64_t heads = 4;                         ///< transformer attention heads
  std::int64_t ff_dim = 256;                      ///< transformer feed-forward width
  bool norm_first = false;                        ///< transformer: LayerNorm before attention and feed-forward (pre-norm)
  bool sync_batch_norm = false;                   ///< batch norm over every rank's samples (several ranks)
};

struct DataConfig {
  std::string source = "synthetic";      ///< synthetic, npy, npz, safetensors, csv, mnist, cifar10, image_folder, postgres
  std::string task = "classification";   ///< classification or regression
  std::string path;                      ///< the training data's file or folder (every source but synthetic)
  std::vector<std::string> labels;       ///< npy: the labels' .npy file; npz/safetensors: key; csv: column(s), several for regression
  std::vector<std::string> features;     ///< npz/safetensors: the features' key; csv: columns (empty: all but the label)
  std::vector<std::string> exclude;      ///< csv: columns left out of the default features (an id, a date)
  std::vector<std::string> categorical;  ///< csv: feature columns of categories, one-hot encoded ("Sex=female", "Sex=male")
  std::string missing = "error";         ///< csv, postgres: a missing feature value is an error, or drop, mean, zero
  std::string val_path, val_labels;      ///< validation data in the same format (mnist/cifar10: found beside)
  std::string dsn;            ///< postgres: libpq's URI or key=value string (empty: PG* variables); a password is masked when shown
  std::string query;          ///< postgres: the SELECT whose rows are the training samples
  std::string val_query;      ///< postgres: the validation rows' SELECT, read in the same snapshot
  bool require_same = false;  ///< postgres: a resumed run whose rows changed stops (exit 2) instead of saying so
  std::optional<std::int64_t> streams;  ///< postgres: the most COPY streams a plain one-table query is read over; nullopt: auto
  std::vector<std::int64_t> image_size = {224, 224};  ///< image_folder: height, width after resize and centre crop
  std::vector<std::int64_t> shape = {3, 32, 32};      ///< synthetic: shape of one sample (files: read from the data)
  std::optional<std::int64_t> classes;                ///< classification: number of classes; nullopt means `auto`
  std::int64_t outputs = 1;                           ///< regression: number of targets (synthetic)
  std::int64_t samples = 4096;                        ///< synthetic: training samples
  std::int64_t val_samples = 1024;                    ///< synthetic: validation samples (0: no validation)
  double val_fraction = 0;                  ///< > 0: hold this fraction of the training samples out for validation (seeded by train.seed)
  bool shuffle = true;                      ///< reshuffle every epoch (seeded, resumable)
  bool drop_last = false;                   ///< skip each epoch's last, smaller batch
  std::string cache = "auto";               ///< auto, vram, ram or none
  std::optional<std::int64_t> num_workers;  ///< loader threads per rank; nullopt means `auto`
  std::int64_t prefetch = 2;                ///< batches in flight per loader thread
  bool pin_memory = true;                   ///< page-locked staging buffers for GPU copies
  double timeout = 120;                     ///< seconds a batch may take before the loader gives up
  std::vector<double> mean, std;            ///< per-channel normalisation after uint8 -> [0, 1]; empty: none
  bool standardize = false;                 ///< measure mean and std on the training set instead (in-memory data)
  bool standardize_targets = false;         ///< regression: train on (y - mean) / std of the training targets
  std::int64_t crop_padding = 0;            ///< random crop with this zero padding (images, training only)
  bool hflip = false;                       ///< random horizontal flip (images, training only)
};

/// train.class_weights: how much each class's samples count in the training loss (classification).
struct ClassWeights {
  bool balanced = false;      ///< from the training labels: samples / (classes present * the class's count), scikit-learn's rule
  std::vector<double> given;  ///< one weight per class, as the config lists them
  bool any() const { return balanced || !given.empty(); }
};

struct TrainConfig {
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;  ///< optimizer steps; 0: no limit beyond `epochs`
  /// Seconds of training (steps, validation, checkpoints; summed over resumes) after which the
  /// run checkpoints and ends as a finished one does; 0: no limit.
  double max_time = 0;
  std::int64_t early_stop_patience = 0;         ///< epochs without a better checkpoint.best_metric before the run stops; 0: off
  double early_stop_min_delta = 0.0;            ///< what counts as better: beating the best by more than this
  std::optional<std::int64_t> batch_size = 64;  ///< micro-batch; nullopt means `auto`
  std::int64_t max_batch_size = 0;              ///< upper bound for `batch_size: auto`; 0: none
  std::int64_t grad_accum = 1;                  ///< micro-batches per optimizer step
  Precision precision = Precision::fp32;
  bool tf32 = true;                   ///< TF32 matmul/conv on Ampere or newer
  std::optional<bool> channels_last;  ///< NHWC for 4-d weights and inputs; nullopt: auto (Config::uses_channels_last)
  bool cudnn_benchmark = true;        ///< let cuDNN pick the fastest algorithms
  /// auto, on, off: replay each step as one captured CUDA graph (train/step/graph_step.cpp);
  /// auto falls back to eager steps where capture cannot work, on makes that an error.
  std::string cuda_graphs = "auto";
  double clip_grad_norm = 0.0;   ///< 0: off
  double label_smoothing = 0.0;  ///< classification: the training loss's target mixes in this share of the uniform distribution
  ClassWeights class_weights;    ///< classification: none (every sample 1), balanced, or one number per class
  std::int64_t seed = 42;
  bool deterministic = false;       ///< deterministic algorithms only (bit-exact resume on CPU)
  std::vector<std::string> freeze;  ///< parameter name prefixes that do not train ("conv1", "layer1"), as in fine-tuning
  /// Blocks that recompute their forward in backward, by name prefix ("layer3", "encoder.layers.0");
  /// {"*"}: every block (`true`), empty: none (`false`).
  std::vector<std::string> activation_checkpointing;
  /// An exponential moving average of the weights, updated every ema_every optimizer steps as
  /// ema = ema_decay * ema + (1 - ema_decay) * weights; 0: none.
  double ema_decay = 0.0;
  std::int64_t ema_every = 1;
  /// train.profile: a Chrome/Perfetto trace of `profile_steps` steps from step `profile_start_step`
  /// (0: none) into `profile_dir` ("": <logging.dir>/traces), LibTorch's Kineto profiler.
  std::int64_t profile_start_step = 0;
  std::int64_t profile_steps = 5;
  std::string profile_dir;
};

/// One entry of optimizer.param_groups: the parameters under `params` (state_dict name prefixes,
/// or "default": every trained parameter no other entry names) with their own rate and decay.
struct ParamGroupConfig {
  std::vector<std::string> params;
  std::optional<double> lr;            ///< unset: optimizer.lr
  std::optional<double> weight_decay;  ///< unset: optimizer.weight_decay
};

struct OptimizerConfig {
  std::string name = "adamw";  ///< sgd, adam, adamw
  double lr = 1e-3;
  double momentum = 0.9;  ///< sgd
  bool nesterov = false;  ///< sgd
  double weight_decay = 0.0;
  std::vector<double> betas = {0.9, 0.999};    ///< adam, adamw
  double eps = 1e-8;                           ///< adam, adamw
  std::vector<ParamGroupConfig> param_groups;  ///< empty: one group of every trained parameter
};

struct SchedulerConfig {
  std::string name = "none";      ///< none, step, cosine, onecycle, plateau
  std::int64_t warmup_steps = 0;  ///< linear warm-up from 0 before the schedule
  std::int64_t step_size = 1000;  ///< step: steps between decays
  double gamma = 0.1;             ///< step, plateau: decay factor
  std::int64_t patience = 10;     ///< plateau: epochs without a better checkpoint.best_metric allowed before a decay
  double min_lr = 0.0;            ///< cosine, plateau: floor
  double pct_start = 0.3;         ///< onecycle: fraction of steps spent rising
};

struct CheckpointConfig {
  std::string dir;                       ///< empty: <logging.dir>/checkpoints
  std::int64_t every_steps = 0;          ///< 0: off
  std::int64_t every_epochs = 1;         ///< 0: off
  std::int64_t keep_last = 3;            ///< older periodic checkpoints are deleted
  std::string best_metric = "val_loss";  ///< val_loss, val_accuracy, val_balanced_accuracy, val_mse, val_mae, none
  std::string best_mode = "auto";        ///< min, max, auto (max for the accuracies, min otherwise)
  std::string resume = "auto";           ///< auto, never, or a checkpoint file
};

/// logging.alerts: each threshold, or nullopt when that alert is off (docs/monitoring.md).
struct AlertsConfig {
  std::optional<double> gpu_memory_percent = 95;        ///< GPU memory used above this share ...
  double gpu_memory_minutes = 5;                        ///< ... for this long
  std::optional<double> gpu_utilization_percent = 50;   ///< GPU utilisation below this ...
  double gpu_utilization_minutes = 5;                   ///< ... for this long
  std::optional<double> temperature_c = 85;             ///< GPU temperature above this
  std::optional<double> data_wait_ms = 50;              ///< waiting for a batch longer than this, per step
  std::optional<double> no_improvement_epochs = 10;     ///< epochs without a better validation loss
  std::optional<double> grad_norm = 10;                 ///< the logged gradient norm above this
  std::optional<double> memory_growth_gb_per_hour = 2;  ///< host memory (RSS) growing faster than this
  bool communication_error = true;                      ///< a collective failed or timed out (NCCL or MPI): the run ends with it
};

/// logging.mlflow: an MLflow tracking server to log the run to (docs/monitoring.md). Off while
/// tracking_uri is empty.
struct MlflowConfig {
  std::string tracking_uri;  ///< http(s)://host:port; MLFLOW_TRACKING_URI when another logging.mlflow key is set
  std::string experiment;    ///< the experiment's name; MLFLOW_EXPERIMENT_NAME, else "Default"
  std::string run_name;      ///< the MLflow run's name; empty: the run folder's name
  double timeout = 10;       ///< seconds one request may take, and the wait for the server at the run's end
};

struct LoggingConfig {
  std::string dir = "runs/default";  ///< the run directory
  std::int64_t every_steps = 10;
  bool jsonl = true;                  ///< metrics.jsonl in the run directory
  bool tensorboard = true;            ///< TensorBoard event file in the run directory
  std::string progress = "auto";      ///< auto (bar on a terminal), bar, lines, off
  bool grad_norm = true;              ///< the global gradient norm of each logged step, in metrics.jsonl and TensorBoard
  std::int64_t histograms_every = 0;  ///< TensorBoard histograms of every weight and gradient each N steps; 0: none
  double system_every = 10;           ///< seconds between system metrics (NVML, host memory); 0: none
  AlertsConfig alerts;
  MlflowConfig mlflow;
};

struct SizingConfig {
  double target_fraction = 0.90;     ///< `batch_size: auto` fills this share of the memory left after the fixed part
  std::string objective = "memory";  ///< memory (largest batch that fits) or throughput (fastest of those)
};

struct OomConfig {
  std::int64_t max_halvings = 3;     ///< micro-batch halvings in effect at once; 0: an OOM ends the run
  std::int64_t min_micro_batch = 1;  ///< never split below this
  std::int64_t regrow_after = 0;     ///< clean steps before trying the larger micro-batch again; 0: never
};

struct DeviceConfig {
  std::string name = "auto";     ///< auto, cpu, cuda, cuda:N
  std::uint64_t max_memory = 0;  ///< bytes this process may use on the device; 0: no cap
};

struct DistributedConfig {
  std::string backend = "auto";     ///< auto (nccl on GPUs, mpi on CPUs), nccl, mpi
  std::int64_t nproc_per_node = 0;  ///< `gputrain train` starts this many local ranks itself; 0: run in this process
  std::int64_t nnodes = 1;          ///< nodes our launcher's ranks span (torchrun's --nnodes); each node runs `gputrain train`
  std::int64_t node_rank = 0;       ///< this node's place, 0 .. nnodes-1: its ranks are node_rank * nproc_per_node + local rank
  std::string master_addr;          ///< where rank 0's rendezvous listens; "" : 127.0.0.1 (one node)
  std::int64_t master_port = 0;     ///< the launcher's rendezvous port; 0: a free one (one node only)
  double timeout = 300;             ///< seconds a collective may take before the run fails
  double bucket_mb = 25;            ///< gradient all-reduce bucket size, MiB
  double first_bucket_mb = 1;       ///< the first (last layers') bucket, MiB: starts communication early
  std::string grad_dtype = "none";  ///< none (the gradients' own), bf16 or fp16: compress the all-reduce
  bool shard_optimizer = false;     ///< ZeRO stage 1: each rank keeps (and steps) the optimizer state of 1/N of the parameters
};

/// The whole resolved configuration.
/// Where a key was set last: the config file ("" for --set, a command's flag or a built-in config)
/// and "file:line:column", "--set k=v" or "--path x" for errors that name it.
struct KeyOrigin {
  std::string file;
  std::string where;
};

struct Config {
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  CheckpointConfig checkpoint;
  LoggingConfig logging;
  SizingConfig sizing;
  OomConfig oom;
  DeviceConfig device;
  DistributedConfig distributed;
  /// Where load_config found each key it was given; keys left at their defaults are absent.
  std::map<std::string, KeyOrigin> origins;

  /// The checkpoint directory after defaults are applied.
  std::string checkpoint_dir() const;
  /// train.profile's trace directory after defaults are applied.
  std::string trace_dir() const;
  /// train.channels_last resolved: `auto` is on for the built-in convolutional models (small_cnn,
  /// resnet*), whose layers all take NHWC, and off otherwise (a TorchScript or registered model may
  /// .view() an activation, which NHWC refuses).
  bool uses_channels_last() const;
  /// What trains, for reports: model.name, or the model.torchscript file that replaces it.
  std::string model_label() const;
};

/// A key a command's own flag sets (`--path x.csv` sets data.path). Its values are taken as
/// written, never parsed as YAML, so a path like "runs #2/x.csv" or "a: b.npy" stays whole.
struct FlagSetting {
  std::string flag;                 ///< "--path", named in errors
  std::string key;                  ///< "data.path"
  std::vector<std::string> values;  ///< one: a scalar; several: a list
};

/// Where the pieces of a configuration come from, lowest priority first.
struct ConfigSources {
  std::vector<std::string> files;      ///< YAML files, later ones override earlier ones
  std::vector<std::string> overrides;  ///< "a.b=c" (c is parsed as YAML: 3, 1e-3, [1,2], fp16-mixed)
  std::string embedded_yaml;           ///< a built-in config applied before the files (may be empty)
  std::vector<FlagSetting> flags{};    ///< applied last, so a command's flag beats the files and --set
};

/// Resolves and validates a configuration. Every mistake throws UsageError (exit 2) naming the
/// file:line:column, the key, the value found and the values allowed (or `did you mean`).
Config load_config(const ConfigSources& sources);

/// The resolved configuration as YAML, every key in schema order (what --print-config shows and
/// what every checkpoint stores).
std::string to_yaml(const Config& config);

/// What changed between two configs printed by to_yaml (a checkpoint's and this run's): one
/// "key old -> new" per key whose value differs, in schema order. Keys only one side has (a
/// checkpoint from another version) are left out.
std::vector<std::string> config_differences(const std::string& before_yaml, const std::string& after_yaml);

/// Every documented key ("train.batch_size"), in schema order.
std::vector<std::string> config_keys();

/// For a command-line flag that is a config key rather than an option (`--epochs`, `--batch-size`,
/// Hugging Face's `--learning_rate`): how to give it, "... --set train.epochs=5 ..." with `value`
/// (VALUE when empty); "" when the flag names no key.
std::string flag_as_setting(const std::string& flag, const std::string& value);

}  // namespace gputrain::train

// Checks that need several keys at once (best_metric against data.task, a path with synthetic
// data, ...): run once every key has been read and checked on its own.
#include "config_consistency.hpp"

#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/train/metrics.hpp"

namespace gputrain::train {
namespace {

[[noreturn]] void inconsistent(const std::string& message, const std::string& remedy) { throw UsageError("config: " + message, remedy); }

// Synthetic data generates its samples, so a path set with it would be silently ignored: the
// user meant a file source, most likely the one the path's format names.
void refuse_files_for_synthetic(const DataConfig& d) {
  const std::string labels = core::join(d.labels);
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"data.path", d.path},
                                   {"data.labels", labels},
                                   {"data.val_path", d.val_path},
                                   {"data.val_labels", d.val_labels}}) {
    if (value.empty()) continue;
    const std::string data_file = d.path.empty() ? value : d.path;
    const std::string guess = data::source_for_path(data_file);
    const std::string remedy = guess.empty() ? "set data.source to the format of your data (" + core::join(data::file_source_names()) + ")"
                                             : "set data.source: " + guess + " (" + data_file + " looks like " + guess + " data)";
    inconsistent(
        std::string(key) + " is set ('" + value + "'), but data.source is synthetic, which generates its samples and reads no files",
        remedy + ", or remove " + key + " to train on synthetic data");
  }
}

// data.source postgres reads a query's rows: the keys of files mean nothing to it, and a query
// it needs.
void check_postgres(const DataConfig& d) {
  if (d.query.empty())
    inconsistent("data.source postgres reads the rows of data.query, which is not set",
                 "set data.query to the SELECT of your samples, e.g. \"SELECT f1, f2, label FROM samples WHERE split = 'train'\"");
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"data.path", d.path}, {"data.val_path", d.val_path}})
    if (!value.empty())
      inconsistent(
          std::string(key) + " is set ('" + value + "'), but data.source postgres reads no files",
          std::string("remove ") + key + (std::string(key) == "data.val_path" ? "; validation rows come from data.val_query" : ""));
}

// What can be told from the config alone; open_data checks a list against the classes the labels
// give when data.classes is auto.
void check_class_weights(const Config& c) {
  const auto& weights = c.train.class_weights;
  if (!weights.any()) return;
  if (c.data.task != "classification")
    inconsistent("train.class_weights weighs the classes' samples in the loss, but data.task is regression",
                 "remove train.class_weights (or set it to none)");
  if (weights.given.empty()) return;
  if (c.data.classes && static_cast<std::int64_t>(weights.given.size()) != *c.data.classes)
    inconsistent("train.class_weights lists " + std::to_string(weights.given.size()) + " weights but data.classes is " +
                     std::to_string(*c.data.classes),
                 "give one weight per class (class 0 first), or train.class_weights: balanced to weigh them by their counts");
  if (std::all_of(weights.given.begin(), weights.given.end(), [](double w) { return w == 0; }))
    inconsistent("train.class_weights are all 0: no sample would count in the loss",
                 "give the classes to train on a weight above 0, e.g. 1");
}

// Our launcher across nodes is torchrun's static rendezvous: every node's launcher names the same
// address and port, which rank 0 (on node 0) listens at.
void check_nodes(const DistributedConfig& d) {
  if (d.nnodes == 1) {
    if (d.node_rank != 0)
      inconsistent("distributed.node_rank is " + std::to_string(d.node_rank) + ", but distributed.nnodes is 1",
                   "set distributed.nnodes (--nnodes) to the number of nodes, or remove distributed.node_rank");
    return;
  }
  const std::string nodes = "distributed.nnodes is " + std::to_string(d.nnodes);
  if (d.nproc_per_node == 0)
    inconsistent(nodes + ", but distributed.nproc_per_node is 0: the launcher that spans nodes starts the ranks of its own",
                 "set --nproc-per-node to the GPUs of each node, e.g. --nproc-per-node 8 --nnodes " + std::to_string(d.nnodes));
  if (d.node_rank >= d.nnodes)
    inconsistent("distributed.node_rank is " + std::to_string(d.node_rank) + ", but " + nodes + " (node ranks are 0 .. " +
                     std::to_string(d.nnodes - 1) + ")",
                 "give each node its own --node-rank from 0 to " + std::to_string(d.nnodes - 1));
  if (d.master_addr.empty() || d.master_port == 0)
    inconsistent(nodes + ", but distributed.master_" + (d.master_addr.empty() ? "addr" : "port") +
                     " is not set: every node must name where rank 0 listens",
                 "give every node the same --master-addr (node 0's host name or address) and --master-port (a free port "
                 "there, e.g. 29500)");
  if (d.backend == "mpi")
    inconsistent(nodes + " with distributed.backend mpi: CPU ranks on several nodes are mpirun's to start",
                 "start them with mpirun and a host file (mpirun -np 16 --hostfile hosts gputrain train ... --set device=cpu), "
                 "without --nnodes");
}

// Products of sizes a config gives (a sample's elements, a batch's bytes, the data's bytes): past
// 2^63 they wrap round to a small or negative number, which then sizes a tensor or divides, so
// they are refused here, before anything is sized by them. Large but representable sizes meet the
// memory checks later, which say what fits.
void check_sizes(const Config& c) {
  constexpr std::int64_t kFloatBytes = 4;
  const auto refuse = [](const std::string& what, const std::string& remedy) {
    inconsistent(what + " more than 2^63 - 1, the most a size can hold", remedy);
  };
  const auto product = [](const std::vector<std::int64_t>& factors) -> std::optional<std::int64_t> {
    std::int64_t out = 1;
    for (const auto f : factors)
      if (__builtin_mul_overflow(out, f, &out)) return std::nullopt;
    return out;
  };
  if (c.train.batch_size && !product({*c.train.batch_size, c.train.grad_accum}))
    refuse("train.batch_size " + std::to_string(*c.train.batch_size) + " x train.grad_accum " + std::to_string(c.train.grad_accum) +
               " samples a step is",
           "lower train.grad_accum or train.batch_size (batch_size: auto picks one that fits)");
  // The sample's shape, where the config gives it (other sources' come from their files, whose readers check them).
  const bool synthetic = c.data.source == "synthetic";
  if (!synthetic && c.data.source != "image_folder") return;
  const auto shape = synthetic ? c.data.shape : std::vector<std::int64_t>{3, c.data.image_size.at(0), c.data.image_size.at(1)};
  const std::string key = synthetic ? "data.shape" : "data.image_size";
  auto dims = shape;
  dims.push_back(kFloatBytes);
  const auto sample_bytes = product(dims);
  if (!sample_bytes)
    refuse(key + " " + c10::str(c10::IntArrayRef(shape)) + " makes one sample's bytes", "give " + key + " sizes a sample can have");
  if (c.train.batch_size && !product({*c.train.batch_size, *sample_bytes}))
    refuse("a batch of " + std::to_string(*c.train.batch_size) + " samples shaped " + c10::str(c10::IntArrayRef(shape)) + " is, in bytes,",
           "lower train.batch_size (batch_size: auto picks one that fits)");
  std::int64_t samples = 0;
  if (synthetic && (__builtin_add_overflow(c.data.samples, c.data.val_samples, &samples) || !product({samples, *sample_bytes})))
    refuse("data.samples " + std::to_string(c.data.samples) + " and data.val_samples " + std::to_string(c.data.val_samples) +
               " of samples shaped " + c10::str(c10::IntArrayRef(shape)) + " are, in bytes,",
           "lower data.samples");
}

// scheduler.min_lr above a base rate: cosine would raise that rate all run (PyTorch's eta_min does
// so too), and plateau's floor would sit above where it starts.
void check_min_lr(const Config& c) {
  const auto& s = c.scheduler;
  if ((s.name != "cosine" && s.name != "plateau") || s.min_lr <= 0) return;
  double lowest = c.optimizer.lr;
  for (const auto& group : c.optimizer.param_groups) lowest = std::min(lowest, group.lr.value_or(c.optimizer.lr));
  if (s.min_lr <= lowest) return;
  inconsistent("scheduler.min_lr " + c10::str(s.min_lr) + " is above the learning rate it would lower (" + c10::str(lowest) +
                   (lowest == c.optimizer.lr ? ", optimizer.lr" : ", an optimizer.param_groups entry's") +
                   "): " + (s.name == "cosine" ? "the cosine schedule would raise it all run" : "plateau's floor would sit above it"),
               "set scheduler.min_lr below it (e.g. a hundredth of the rate), or 0");
}

// Values inside their ranges that leave a run learning nothing or dividing by zero, with no sign
// until the loss goes flat or NaN (whose message would blame the learning rate).
void check_degenerate_values(const Config& c) {
  const auto& o = c.optimizer;
  if ((o.name == "adam" || o.name == "adamw") && o.eps == 0)
    inconsistent("optimizer.eps 0 makes " + o.name +
                     "'s update m / (sqrt(v) + eps) 0 / 0 wherever a gradient is exactly 0 (a ReLU unit "
                     "that never fires, an unused embedding row): NaN weights from the first such step",
                 "set optimizer.eps to a small positive value: 1e-08 (the default, PyTorch's too)");
  // SGD's and AdamW's decay take lr x weight_decay of every weight each step: at 1 or more the
  // weights change sign and grow, and the NaN that follows was blamed on the learning rate.
  if (o.name == "sgd" || o.name == "adamw")
    for (std::size_t i = 0; i <= o.param_groups.size(); ++i) {
      const bool group = i < o.param_groups.size();
      const double lr = group ? o.param_groups[i].lr.value_or(o.lr) : o.lr;
      const double decay = group ? o.param_groups[i].weight_decay.value_or(o.weight_decay) : o.weight_decay;
      if (lr * decay < 1) continue;
      inconsistent((group ? "optimizer.param_groups[" + std::to_string(i) + "]'s" : std::string("the")) + " weight decay " +
                       c10::str(decay) + " at learning rate " + c10::str(lr) + " takes lr x weight_decay = " + c10::str(lr * decay) +
                       " of every weight each step (1 or more): the weights change sign and grow until they are NaN",
                   "lower optimizer.weight_decay" + std::string(group ? " or the entry's" : "") +
                       " so that lr x weight_decay is well under 1 (" +
                       (o.name == "adamw" ? "AdamW's usual: 0.01 to 0.1" : "SGD's usual: 1e-4 to 5e-4") + ")");
    }
  if (o.name == "sgd" && o.momentum == 1)
    inconsistent("optimizer.momentum 1 never lets a gradient fade: every step moves by the sum of all gradients so far",
                 "use a value below 1: 0.9 is usual");
  if (c.train.label_smoothing == 1 && c.data.task == "classification")
    inconsistent(
        "train.label_smoothing 1 replaces every target with the uniform distribution over the classes: the labels teach "
        "nothing",
        "use a value below 1: 0.1 is usual");
  const auto& s = c.scheduler;
  if ((s.name == "step" || s.name == "plateau") && s.gamma == 0)
    inconsistent("scheduler.gamma 0 sets the learning rate to 0 at the " +
                     std::string(s.name == "step" ? "first decay (after scheduler.step_size steps)" : "first plateau") +
                     ": the run learns nothing after it",
                 "use a factor above 0: 0.1 is usual" + std::string(s.name == "plateau" ? " (0.1 to 0.5 with plateau)" : ""));
}

}  // namespace

void check_consistency(const Config& c) {
  check_nodes(c.distributed);
  const bool classification = c.data.task == "classification";
  const bool columns = c.data.source == "csv" || c.data.source == "postgres";  // sources of named columns
  if (!c.data.exclude.empty() && !columns)
    inconsistent("data.exclude names CSV columns, but data.source is " + c.data.source,
                 c.data.features.empty() ? "remove data.exclude" : "remove data.exclude; data.features picks the features' array");
  if (!c.data.categorical.empty() && !columns)
    inconsistent("data.categorical names CSV columns of categories, but data.source is " + c.data.source,
                 "remove data.categorical; one-hot encode the categories into the arrays first");
  if (!c.data.exclude.empty() && !c.data.features.empty())
    inconsistent("data.exclude and data.features are both set: the features are either listed or all but some",
                 "keep one: data.features lists the columns to read, data.exclude the ones to leave out of all the others");
  const auto& metric = c.checkpoint.best_metric;
  if (metric != plain_metric(metric) && c.train.ema_decay == 0)
    inconsistent("checkpoint.best_metric " + metric + " is a figure of the weights' moving average, but train.ema_decay is 0 (none)",
                 "set train.ema_decay, e.g. 0.999, or checkpoint.best_metric: " + plain_metric(metric));
  if (is_accuracy_metric(metric) && !classification)
    inconsistent("checkpoint.best_metric " + metric + " needs data.task classification (it is regression)",
                 "use val_loss, val_mse or val_mae for regression");
  if ((plain_metric(metric) == "val_mse" || plain_metric(metric) == "val_mae") && classification)
    inconsistent("checkpoint.best_metric " + metric + " needs data.task regression (it is classification)",
                 "use val_loss, val_accuracy or val_balanced_accuracy for classification");
  if (metric != "none" && metric != "val_loss" && c.data.source == "synthetic" && c.data.val_samples == 0 && c.data.val_fraction == 0)
    inconsistent("checkpoint.best_metric " + metric + " needs validation data (data.val_samples is 0)",
                 "set data.val_samples above 0, or checkpoint.best_metric to none");
  if (c.train.label_smoothing > 0 && !classification)
    inconsistent("train.label_smoothing softens class targets, but data.task is regression",
                 "remove train.label_smoothing (or set it to 0)");
  check_class_weights(c);
  // Early stopping watches the figure best.pt is kept by, so that the weights it ends with (best.pt's)
  // are the best by the same measure; scheduler: plateau watches it too.
  const auto check_watcher = [&](bool on, const std::string& who, const std::string& action, const std::string& off) {
    if (on && metric == "none")
      inconsistent(who + " " + action + " when checkpoint.best_metric stops improving, but checkpoint.best_metric is none",
                   std::string("set checkpoint.best_metric: ") +
                       (classification ? "val_loss, val_accuracy or val_balanced_accuracy" : "val_loss, val_mse or val_mae") + ", or " +
                       off);
    if (on && c.data.source == "synthetic" && c.data.val_samples == 0 && c.data.val_fraction == 0)
      inconsistent(who + " watches a validation figure, but there is no validation data (data.val_samples is 0)",
                   "set data.val_samples above 0, or " + off);
  };
  check_watcher(c.train.early_stop_patience > 0, "train.early_stop_patience", "stops the run", "train.early_stop_patience: 0");
  check_watcher(c.scheduler.name == "plateau", "scheduler.name plateau", "lowers the learning rate", "pick another scheduler.name");
  if (c.train.early_stop_min_delta > 0 && c.train.early_stop_patience == 0)
    inconsistent("train.early_stop_min_delta is set, but early stopping is off (train.early_stop_patience is 0)",
                 "set train.early_stop_patience, e.g. 5 (epochs without improvement before the run stops), or remove "
                 "train.early_stop_min_delta");
  if (c.model.name == "transformer" && c.model.torchscript.empty() && c.model.d_model % c.model.heads != 0)
    inconsistent(
        "model.d_model (" + std::to_string(c.model.d_model) + ") must be a multiple of model.heads (" + std::to_string(c.model.heads) + ")",
        "pick heads that divide d_model, e.g. d_model 128 with heads 4");
  if (c.model.name == "transformer" && c.model.torchscript.empty() && c.data.source == "synthetic" && c.data.shape.size() != 2)
    inconsistent(
        "the transformer reads samples shaped [sequence, features]; data.shape has " + std::to_string(c.data.shape.size()) + " dimensions",
        "set data.shape to [sequence_length, features], e.g. [32, 16]");
  if (c.data.source == "synthetic") refuse_files_for_synthetic(c.data);
  if (c.data.source == "postgres") check_postgres(c.data);
  if (c.data.source != "synthetic" && c.data.source != "postgres" && c.data.path.empty())
    inconsistent("data.source " + c.data.source + " reads files, but data.path is not set",
                 "set data.path to the training data's file or folder (docs/data.md)");
  if (c.data.mean.size() != c.data.std.size())
    inconsistent("data.mean has " + std::to_string(c.data.mean.size()) + " values but data.std has " + std::to_string(c.data.std.size()),
                 "give one mean and one std per channel, e.g. mean: [0.49, 0.48, 0.45] and std: [0.25, 0.24, 0.26]");
  if (c.data.standardize && !c.data.mean.empty())
    inconsistent("data.standardize measures data.mean and data.std on the training set, but they are set too",
                 "keep one: data.standardize: true, or your own data.mean and data.std");
  if (c.data.standardize_targets && classification)
    inconsistent("data.standardize_targets scales regression targets, but data.task is classification (class ids are not scaled)",
                 "remove data.standardize_targets, or set data.task: regression");
  if (c.data.image_size.size() != 2)
    inconsistent("data.image_size has " + std::to_string(c.data.image_size.size()) + " values", "give [height, width], e.g. [224, 224]");
  check_sizes(c);
  if (c.scheduler.name == "onecycle" && c.scheduler.warmup_steps > 0)
    inconsistent("scheduler.onecycle has its own warm-up (pct_start); scheduler.warmup_steps must be 0",
                 "remove scheduler.warmup_steps or pick the cosine schedule");
  check_min_lr(c);
  check_degenerate_values(c);
}

}  // namespace gputrain::train

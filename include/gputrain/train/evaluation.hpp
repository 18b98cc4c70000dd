#pragma once
// What `gputrain train CONFIG --evaluate WEIGHTS` measures: a trained model's validation figures
// on the config's validation data (a test set, given as data.val_path), without training or
// writing anything; and the lines and JSON it is reported as.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/train/metrics.hpp"

namespace gputrain::train {

/// One evaluation of a weights file (Trainer::evaluate).
struct EvaluationResult {
  std::string weights;                      ///< the file evaluated: a checkpoint (.pt) or a weights file (.safetensors)
  bool from_checkpoint = false;             ///< a checkpoint: the two figures below say where its run was
  std::int64_t checkpoint_step = 0;         ///< optimizer steps the checkpoint's run had done
  std::int64_t checkpoint_epochs_done = 0;  ///< epochs it had completed
  bool checkpoint_inside_epoch = false;     ///< written during the next epoch (checkpoint.every_steps, a stop)
  std::string data;                         ///< the validation data, as the run's data line describes it
  std::int64_t samples = 0;                 ///< validation samples evaluated, over all ranks
  std::string device;                       ///< "cpu", "cuda:0"
  int rank = 0;                             ///< rank 0 reports
  double seconds = 0;                       ///< the validation pass (set-up excluded)
  /// val_loss and val_accuracy, val_balanced_accuracy and the per-class counts (classification),
  /// or val_mse and val_mae in the targets' units (regression).
  EpochMetrics metrics;
  std::vector<std::string> class_names;  ///< the data's class names by id; empty when the labels are numbers
};

/// Throws a UsageError with the fix unless `weights` is a file that holds weights: a checkpoint
/// (a zip archive) or a safetensors file. Whether they fit the model is for Trainer::evaluate.
void check_weights_file(const std::string& weights);

/// The lines people read: what was evaluated on what, the figures, and each class's recall and
/// precision (classification).
std::vector<std::string> evaluation_lines(const EvaluationResult& result);

/// The same as one JSON object, for scripts and CI (`--json`): weights, data, samples, device,
/// seconds, the val_* figures, and for classification a "classes" list of {id, name, samples,
/// right, predicted, recall, precision} (recall/precision null where undefined).
std::string evaluation_json(const EvaluationResult& result);

}  // namespace gputrain::train

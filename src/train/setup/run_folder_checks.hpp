#pragma once
// Where a run may write, checked before it writes anything. A run writes config.yaml,
// model.safetensors, metrics.jsonl, report.json and training.log into logging.dir: a folder no
// run has used that holds files so named (`logging.dir: .` beside one's own config.yaml) would
// have them written over. And an image folder's sub-folders are its classes: a run folder inside
// data.path became a class of the next run ("class 'runs' has no images"). And a run folder's own
// config.yaml, trained on after the folder moved (or from another folder), names its old place.

#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Throws UsageError naming the files when logging.dir holds any a run writes and no gputrain run
/// has used it (no .gputrain.lock, nor checkpoints/*.pt); and when a checkpoint.dir of its own
/// holds a best.pt but no lock and no step-*.pt.
void refuse_foreign_run_files(const Config& config);

/// Throws UsageError when logging.dir or checkpoint.dir lies inside an image folder's data.path
/// or data.val_path.
void refuse_run_folder_among_classes(const Config& config);

/// Throws UsageError at its line when logging.dir was set by a run folder's own config.yaml
/// (beside its .gputrain.lock or checkpoints) and names another folder: the run folder was moved
/// or copied, or gputrain runs from another folder than the run did, and training would start
/// over (or go on with another run) away from this run's checkpoints.
void refuse_run_config_from_elsewhere(const Config& config);

}  // namespace gputrain::train

#pragma once
// What `gputrain train` and `gputrain profile` both do before the first step: pick the device
// (with its memory cap and CPU memory counting in place), open the data, decide where it lives
// (GPU memory, RAM, or streamed by the threaded loader) and build the feeds.

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/batch.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/data/feed.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The device a config runs on.
struct RunDevice {
  c10::Device device{c10::kCPU};
  std::string name;                ///< "cpu", or the GPU's name ("NVIDIA H100 80GB HBM3")
  std::vector<std::string> notes;  ///< worth telling the user (e.g. auto fell back to the CPU)
};

/// Selects `device.name`, counts CPU allocations from here on, and applies `device.max_memory`.
/// Throws UsageError/EnvironmentError (exit 2/3) for a device this machine does not have.
RunDevice prepare_device(const Config& config);

/// A config's data, opened: array files memory-mapped or parsed, image folders listed.
struct RunData {
  data::Sources sources;
  data::BatchTransform transform;  ///< uint8 -> float, normalisation, augmentation
  /// For the run's log: what data.standardize and data.standardize_targets measured, or without
  /// them a hint when features or regression targets are far from unit scale; and when one class
  /// is most of the samples, the accuracy of always answering it.
  std::vector<std::string> data_notes;
  /// train.class_weights for these labels: float32 [classes] on the CPU; undefined for none.
  at::Tensor class_weights;
  bool unbalanced_classes = false;  ///< the most common class is far above an even share (the note above says so)
  double read_seconds = 0;          ///< opening the sources: parsing a CSV, inflating an .npz, listing a folder
  std::string model_choice;         ///< with model.name auto: which model the samples' shape chose, for the run's log
};

/// Opens `config.data` and fills in what the files decide: data.shape (one sample's shape),
/// data.classes when `auto` (checked against the labels when set), data.outputs (regression),
/// model.name when `auto` (model_for_samples), with data.standardize data.mean and data.std
/// measured on the training samples, and with data.standardize_targets the transform's
/// target_mean and target_std measured on the training targets, and with train.class_weights the
/// weights for the training labels (class_weights.hpp).
/// `evaluating` (train --evaluate): data.val_path may come with the run's data.val_fraction, which
/// then only keeps the training samples as they were. Throws UsageError naming the file and what is wrong.
RunData open_data(Config& config, bool evaluating = false);

constexpr std::uint64_t kProbeSampleBytes = std::uint64_t{256} << 20;
/// Up to `count` training samples on `device`, and no more than `most_bytes` of them (but 3 at
/// least), read in order: what the batch-size probes and the step-memory measurement step on (the
/// dataset's real sample shape and dtype).
data::TensorDataset probe_samples(const RunData& data, c10::Device device, std::int64_t count = 1024,
                                  std::uint64_t most_bytes = kProbeSampleBytes);

/// A TorchScript model is built in Python, not from the data as the registry's models are: one
/// forward pass of two training samples checks that it takes them and gives what the loss needs.
/// Throws UsageError (exit 2) naming the file, the sample shape and the output wanted, so a
/// mismatch stops the run before it starts, not mid-run or as a silently broadcast loss; also
/// float32 parameters, and some that train when `training`. Loads a copy of the model and runs it
/// in evaluation mode without autograd; nothing for registry models.
void check_scripted_model(const Config& config, const RunData& data, c10::Device device, bool training = true);

/// Bytes of the training and validation samples once decoded, in their stored dtypes.
std::uint64_t dataset_bytes(const RunData& data);

/// What the data takes on `device` while training, besides the batches: the cached dataset and the
/// chunk its feed gathers batches into (data::gather_chunk_bytes) when `plan` puts it in GPU
/// memory; else 0. The memory batch_size auto's probes hold aside for it.
std::uint64_t cache_reserve_bytes(const RunData& data, const data::CachePlan& plan, c10::Device device);

/// Where the data should live, from `data.cache`, the dataset's size, the step's peak memory
/// (`step_bytes`, measured) and what the device and host have free.
data::CachePlan plan_data_cache(const Config& config, const RunData& data, c10::Device device, std::uint64_t step_bytes,
                                data::CacheFigures* figures = nullptr);

/// The feeds the training and validation loops read, and what it took to set them up.
struct DataPlacement {
  data::CachePlan plan;
  std::unique_ptr<data::DeviceCache> train_cache, val_cache;
  std::unique_ptr<data::Feed> train_feed, val_feed;  ///< val_feed is null without validation data
  double load_seconds = 0;                           ///< one-time load into the cache
  std::vector<std::string> skipped;                  ///< unreadable samples left out while loading
  std::string summary;                               ///< "12000 samples, 351.6 MiB in GPU memory (load 0.42 s), 9.1 GiB left for training"
};

/// Loads the caches (`plan.mode` vram or ram) or starts the loaders (none, `workers` threads each).
/// `evaluating`: the validation data alone is streamed (no training loader, no train_feed).
DataPlacement place_data(const Config& config, const RunData& data, c10::Device device, const data::CachePlan& plan,
                         std::int64_t train_batch, std::int64_t val_batch, int workers, bool evaluating = false);

/// Outputs of the model's last layer: classes or regression targets.
std::int64_t model_outputs(const Config& config);

}  // namespace gputrain::train

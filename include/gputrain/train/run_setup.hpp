#pragma once
// What `gputrain train` and `gputrain profile` both do before the first step: pick the device
// (with its memory cap and CPU memory counting in place) and build the data on it.

#include <c10/core/Device.h>

#include <string>
#include <vector>

#include "gputrain/data/tensor_dataset.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The device a config runs on.
struct RunDevice {
  c10::Device device{c10::kCPU};
  std::string name;                 ///< "cpu", or the GPU's name ("NVIDIA H100 80GB HBM3")
  std::vector<std::string> notes;   ///< worth telling the user (e.g. auto fell back to the CPU)
};

/// Selects `device.name`, counts CPU allocations from here on, and applies `device.max_memory`.
/// Throws UsageError/EnvironmentError (exit 2/3) for a device this machine does not have.
RunDevice prepare_device(const Config& config);

/// Training and validation samples of `config.data`, resident on `device`.
struct RunData {
  data::TensorDataset train, val;
};
RunData load_data(const Config& config, c10::Device device);

/// Outputs of the model's last layer: classes or regression targets.
std::int64_t model_outputs(const Config& config);

}  // namespace gputrain::train

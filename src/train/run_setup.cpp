#include "gputrain/train/run_setup.hpp"

#include <torch/cuda.h>

#include "gputrain/core/error.hpp"
#include "gputrain/device/gpu_info.hpp"
#include "gputrain/device/select.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/memory/device_memory.hpp"

namespace gputrain::train {

RunDevice prepare_device(const Config& config) {
  // Counted from the start, so the memory model and the cap see the data and the model too.
  memory::install_counting_cpu_allocator();
  RunDevice run;
  const std::string& spec = config.device.name;
  if (spec == "cpu") {
    run.name = "cpu";
  } else {
    const auto inventory = device::discover_gpus();
    const auto choice = device::select_device(spec, inventory);
    if (choice.kind == device::DeviceChoice::Kind::cpu) {
      run.name = "cpu";
      if (spec == "auto") run.notes.push_back("no GPU is visible: training on the CPU (run `gputrain verify` to see why)");
    } else {
      if (!torch::cuda::is_available())
        throw EnvironmentError("the driver reports a GPU but LibTorch cannot use CUDA",
                               "run `gputrain verify` to see which CUDA library or driver is at fault");
      run.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(choice.index));
      for (const auto& gpu : inventory.gpus)
        if (gpu.index == choice.index) run.name = gpu.name;
    }
  }
  if (config.device.max_memory != 0) memory::cap_memory(run.device, config.device.max_memory);
  return run;
}

std::int64_t model_outputs(const Config& config) {
  return config.data.task == "classification" ? config.data.classes : config.data.outputs;
}

RunData load_data(const Config& config, c10::Device device) {
  const data::SyntheticSpec spec{config.data.task, config.data.shape, model_outputs(config),
                                 static_cast<std::uint64_t>(config.train.seed)};
  RunData out;
  // The synthetic set is small enough to live on the device; batches are gathered there.
  const auto train = data::make_synthetic(spec, config.data.samples, 0);
  out.train = {train.inputs.to(device), train.targets.to(device)};
  if (config.data.val_samples > 0) {
    const auto val = data::make_synthetic(spec, config.data.val_samples, 1);
    out.val = {val.inputs.to(device), val.targets.to(device)};
  }
  return out;
}

}  // namespace gputrain::train

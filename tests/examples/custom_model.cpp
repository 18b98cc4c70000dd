// Example (compiled and run by the tests, shown in docs/configuration.md): a C++ user adds a model
// to the registry and reuses everything else: YAML config, AMP, checkpoints, metrics.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <filesystem>
#include <iostream>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/trainer.hpp"

// Any module whose forward maps a batch tensor to [N, outputs] will do.
struct LinearProbeImpl : torch::nn::Module {
  LinearProbeImpl(std::int64_t features, std::int64_t outputs) : linear(register_module("linear", torch::nn::Linear(features, outputs))) {}
  at::Tensor forward(const at::Tensor& x) { return linear(x.flatten(1)); }
  torch::nn::Linear linear;
};
TORCH_MODULE(LinearProbe);

int main() {
  using namespace gputrain::train;
  register_model("linear_probe", [](const ModelSpec& spec) {
    std::int64_t features = 1;
    for (auto d : spec.input_shape) features *= d;
    return torch::nn::AnyModule(LinearProbe(features, spec.outputs));
  });

  const auto run_dir = std::filesystem::temp_directory_path() / "gputrain-custom-model";
  std::filesystem::remove_all(run_dir);
  const Config config =
      load_config({{},
                   {"model.name=linear_probe", "data.shape=[20]", "data.classes=4", "data.samples=512", "train.epochs=5",
                    "train.batch_size=32", "optimizer.lr=0.01", "device=cpu", "logging.progress=lines", "logging.dir=" + run_dir.string()},
                   ""});
  Trainer trainer(config);
  const FitResult result = trainer.fit();
  const bool learned = result.last_epoch && result.last_epoch->val_accuracy && *result.last_epoch->val_accuracy > 0.6;
  std::cout << "linear_probe: val accuracy " << (result.last_epoch ? result.last_epoch->val_accuracy.value_or(0) : 0)
            << (learned ? " (learned)" : " (did not learn)") << "\n";
  return learned && std::filesystem::exists(result.weights_path) ? 0 : 1;
}

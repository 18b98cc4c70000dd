#pragma once
// train::Model: what the trainer needs from a network, whether it was built in C++ (a registered
// torch::nn module) or scripted in Python (a TorchScript file).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>
#include <utility>
#include <vector>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace gputrain::train {

/// Tensors by their PyTorch state_dict names ("layer1.0.conv1.weight").
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class Model {
 public:
  virtual ~Model() = default;
  /// A batch [N, ...sample shape] in, [N, outputs] out.
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  /// Trainable parameters, in a stable order (the optimizer's order).
  virtual std::vector<at::Tensor> parameters() = 0;
  /// Parameters and buffers (e.g. batch-norm running stats) by state_dict name.
  virtual NamedTensors named_state() = 0;
  /// Moves every parameter and buffer to `device`.
  virtual void to(c10::Device device) = 0;
  /// Training mode (dropout on, batch-norm updating) or evaluation mode.
  virtual void set_training(bool on) = 0;
  /// For the run's header line, e.g. "resnet18".
  virtual std::string name() const = 0;
  /// The torch::nn module behind a network built in C++ (the training step reads a plain stack of
  /// layers from it to run its backward pass by hand); nullptr for a TorchScript one.
  virtual torch::nn::Module* module() { return nullptr; }
};

/// Sum of elements over the model's parameters.
std::int64_t parameter_count(Model& model);

/// Stores 4-d parameters in channels_last (NHWC) layout, which tensor cores convolve fastest.
void use_channels_last(Model& model);

/// Where named tensors come from, for the errors of load_named_state.
struct StateOrigin {
  std::string name = "the checkpoint";  ///< "the checkpoint", "model.init_weights (w.safetensors)"
  std::string remedy =
      "resume with the config the checkpoint was written with (it is stored in the checkpoint), or set checkpoint.resume: never";
};

/// Copies `state` into the model's tensors by name. Throws Error naming any missing, unexpected
/// or mis-shaped tensor, so weights of a different model are refused, not half-loaded. Names that
/// differ by a prefix ("module." from Python's DDP, "model." from a wrapper) are named as such.
void load_named_state(Model& model, const NamedTensors& state, const StateOrigin& origin = {});

}  // namespace gputrain::train

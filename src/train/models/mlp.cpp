#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include "gputrain/train/sync_batch_norm.hpp"

#include "builtin_models.hpp"
#include "train/models/layers/cpu_dropout.hpp"

namespace gputrain::train::models {

// Layer order and names match a Python nn.Sequential built the same way, so state_dict keys
// ("1.weight", ...) are the same on both sides (the benchmarks rely on it).
torch::nn::AnyModule make_mlp(const ModelSpec& spec) {
  std::int64_t width = 1;
  for (auto d : spec.input_shape) width *= d;
  PlainSequential net;
  net->push_back(torch::nn::Flatten());
  for (auto hidden : spec.config.hidden) {
    net->push_back(torch::nn::Linear(width, hidden));
    if (spec.config.norm == "batch") net->push_back(SyncableBatchNorm1d(hidden));
    if (spec.config.norm == "layer") net->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    net->push_back(make_activation(spec.config.activation));
    if (spec.config.dropout > 0) net->push_back(CpuDropout(spec.config.dropout));  // masks from vector lanes (cpu_dropout.hpp)
    width = hidden;
  }
  net->push_back(torch::nn::Linear(width, spec.outputs));
  return torch::nn::AnyModule(net);
}

}  // namespace gputrain::train::models

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include "gputrain/train/sync_batch_norm.hpp"

#include "builtin_models.hpp"
#include "train/models/layers/cpu_dropout.hpp"

namespace gputrain::train::models {

torch::nn::AnyModule make_small_cnn(const ModelSpec& spec) {
  require_sample_dims(spec, 3, "small_cnn", "[channels, height, width]", "[3, 32, 32]");
  const std::int64_t w = spec.config.width;
  PlainSequential net;
  std::int64_t in = spec.input_shape[0];
  for (std::int64_t out : {w, 2 * w, 4 * w}) {
    net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false)));
    net->push_back(SyncableBatchNorm2d(out));
    net->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
    if (out != 4 * w) net->push_back(torch::nn::MaxPool2d(2));
    in = out;
  }
  net->push_back(torch::nn::AdaptiveAvgPool2d(1));
  net->push_back(torch::nn::Flatten());
  if (spec.config.dropout > 0) net->push_back(CpuDropout(spec.config.dropout));  // masks from vector lanes (cpu_dropout.hpp)
  net->push_back(torch::nn::Linear(4 * w, spec.outputs));
  return torch::nn::AnyModule(net);
}

}  // namespace gputrain::train::models

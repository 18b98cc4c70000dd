#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include "gputrain/train/sync_batch_norm.hpp"

#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include "builtin_models.hpp"
#include "gputrain/core/error.hpp"
#include "train/models/layers/cpu_dropout.hpp"

namespace gputrain::train::models {

torch::nn::AnyModule make_small_cnn(const ModelSpec& spec) {
  require_sample_dims(spec, 3, "small_cnn", "[channels, height, width]", "[3, 32, 32]");
  // Two 2x2 max-pools: a side under 4 would pool down to nothing (LibTorch: "Output size is too small").
  const auto height = spec.input_shape[1], width = spec.input_shape[2];
  if (height < 4 || width < 4)
    throw UsageError("small_cnn halves its images twice (2x2 max-pools), so each side must be 4 or more; these samples are " +
                         std::to_string(height) + "x" + std::to_string(width) + " (shape " + c10::str(c10::IntArrayRef(spec.input_shape)) +
                         ")",
                     "give it larger images (synthetic data: data.shape: [3, 32, 32]; an image folder: data.image_size: 32), or use "
                     "model.name: resnet18, which takes any size, or mlp, which flattens samples of any shape");
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

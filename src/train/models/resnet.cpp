// ResNet-18/34/50 laid out as torchvision does (same module names, so state_dict keys match).
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>
#include "gputrain/train/activation_checkpoint.hpp"
#include "gputrain/train/sync_batch_norm.hpp"

#include "builtin_models.hpp"

namespace gputrain::train::models {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

nn::Sequential downsample(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return nn::Sequential(conv(in, out, 1, stride), SyncableBatchNorm2d(out));
}

// A block whose input comes forked (ForkedOutput: its first convolution reads `main`, its
// shortcut `shortcut`) and whose output goes out forked to the next block.
struct ForkedBlock {
  virtual ~ForkedBlock() = default;
  virtual ForkedOutput forward_forked(const ForkedOutput& x) = 0;
};

// A recomputed block (activation checkpointing) takes one input tensor: its readers' gradients
// are added by autograd there.
template <typename Block>
ForkedOutput forked(Block& block, const ForkedOutput& x) {
  if (block.recomputes_in_backward()) return ForkedOutput::same(block.forward(x.main));
  return block.block_forward_forked(x);
}

struct BasicBlockImpl : nn::Module, CheckpointableBlock, ForkedBlock {
  static constexpr std::int64_t kExpansion = 1;
  BasicBlockImpl(std::int64_t in, std::int64_t planes, std::int64_t stride)
      : conv1(register_module("conv1", conv(in, planes, 3, stride))),
        bn1(register_module("bn1", SyncableBatchNorm2d(planes))),
        conv2(register_module("conv2", conv(planes, planes, 3, 1))),
        bn2(register_module("bn2", SyncableBatchNorm2d(planes))) {
    if (stride != 1 || in != planes) shortcut = register_module("downsample", downsample(in, planes, stride));
  }
  at::Tensor forward(const at::Tensor& x) { return run_block(x); }
  bool draws_random_numbers() const override { return false; }
  at::Tensor block_forward(const at::Tensor& x) override { return block_forward_forked(ForkedOutput::same(x)).main; }
  ForkedOutput forward_forked(const ForkedOutput& x) override { return forked(*this, x); }
  ForkedOutput block_forward_forked(const ForkedOutput& x) {
    const auto y = bn1->forward_relu(conv1(x.main));
    return bn2->forward_relu_forked(conv2(y), shortcut ? shortcut->forward(x.shortcut) : x.shortcut);
  }
  nn::Conv2d conv1;
  SyncableBatchNorm2d bn1;
  nn::Conv2d conv2;
  SyncableBatchNorm2d bn2;
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(BasicBlock);

struct BottleneckImpl : nn::Module, CheckpointableBlock, ForkedBlock {
  static constexpr std::int64_t kExpansion = 4;
  BottleneckImpl(std::int64_t in, std::int64_t planes, std::int64_t stride)
      : conv1(register_module("conv1", conv(in, planes, 1, 1))),
        bn1(register_module("bn1", SyncableBatchNorm2d(planes))),
        conv2(register_module("conv2", conv(planes, planes, 3, stride))),
        bn2(register_module("bn2", SyncableBatchNorm2d(planes))),
        conv3(register_module("conv3", conv(planes, planes * kExpansion, 1, 1))),
        bn3(register_module("bn3", SyncableBatchNorm2d(planes * kExpansion))) {
    if (stride != 1 || in != planes * kExpansion) shortcut = register_module("downsample", downsample(in, planes * kExpansion, stride));
  }
  at::Tensor forward(const at::Tensor& x) { return run_block(x); }
  bool draws_random_numbers() const override { return false; }
  at::Tensor block_forward(const at::Tensor& x) override { return block_forward_forked(ForkedOutput::same(x)).main; }
  ForkedOutput forward_forked(const ForkedOutput& x) override { return forked(*this, x); }
  ForkedOutput block_forward_forked(const ForkedOutput& x) {
    auto y = bn1->forward_relu(conv1(x.main));
    y = bn2->forward_relu(conv2(y));
    return bn3->forward_relu_forked(conv3(y), shortcut ? shortcut->forward(x.shortcut) : x.shortcut);
  }
  nn::Conv2d conv1;
  SyncableBatchNorm2d bn1;
  nn::Conv2d conv2;
  SyncableBatchNorm2d bn2;
  nn::Conv2d conv3;
  SyncableBatchNorm2d bn3;
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(Bottleneck);

struct ResNetImpl : nn::Module {
  ResNetImpl(const ModelSpec& spec, const std::vector<std::int64_t>& blocks, bool bottleneck) {
    const bool imagenet = spec.config.stem == "imagenet";
    conv1 = register_module("conv1", imagenet ? conv(spec.input_shape[0], 64, 7, 2) : conv(spec.input_shape[0], 64, 3, 1));
    bn1 = register_module("bn1", SyncableBatchNorm2d(64));
    if (imagenet) pool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
    std::int64_t in = 64;
    const std::int64_t expansion = bottleneck ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion;
    for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
      const std::int64_t planes = 64 << stage;
      nn::Sequential layer;
      for (std::int64_t b = 0; b < blocks[stage]; ++b) {
        const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        if (bottleneck)
          layer->push_back(Bottleneck(in, planes, stride));
        else
          layer->push_back(BasicBlock(in, planes, stride));
        in = planes * expansion;
      }
      layers.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc = register_module("fc", nn::Linear(in, spec.outputs));
  }
  // Each block's input forked between its convolution and its shortcut (ForkedOutput); after the
  // ImageNet stem's pooling, one tensor.
  at::Tensor forward(const at::Tensor& x) {
    auto y = pool ? ForkedOutput::same(pool(bn1->forward_relu(conv1(x)))) : bn1->forward_relu_forked(conv1(x));
    for (auto& layer : layers)
      for (const auto& block : *layer) y = dynamic_cast<ForkedBlock&>(*block.ptr()).forward_forked(y);
    return fc(torch::flatten(torch::adaptive_avg_pool2d(y.main, {1, 1}), 1));
  }
  nn::Conv2d conv1{nullptr};
  SyncableBatchNorm2d bn1{nullptr};
  nn::MaxPool2d pool{nullptr};
  std::vector<nn::Sequential> layers;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace

torch::nn::AnyModule make_resnet(const ModelSpec& spec, int depth) {
  require_sample_dims(spec, 3, "resnet" + std::to_string(depth), "[channels, height, width]", "[3, 32, 32]");
  switch (depth) {
    case 18:
      return torch::nn::AnyModule(ResNet(spec, std::vector<std::int64_t>{2, 2, 2, 2}, false));
    case 34:
      return torch::nn::AnyModule(ResNet(spec, std::vector<std::int64_t>{3, 4, 6, 3}, false));
    default:
      return torch::nn::AnyModule(ResNet(spec, std::vector<std::int64_t>{3, 4, 6, 3}, true));
  }
}

}  // namespace gputrain::train::models

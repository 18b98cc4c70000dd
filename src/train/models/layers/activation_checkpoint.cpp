// Activation checkpointing as a LibTorch autograd Function, torch.utils.checkpoint's reentrant
// form: the forward runs the block without recording, keeping its input; backward restores what
// the forward saw (random generators, autocast), runs the block again recording, and back-
// propagates through that graph, which leaves the parameters' gradients where autograd's hooks
// (the gradient all-reduce's among them) see them, and returns the input's.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>
#include <torch/nn/module.h>

#include <cstdint>

#include "gputrain/train/activation_checkpoint.hpp"
#include "train/checkpoint/rng_state.hpp"

namespace gputrain::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr c10::DeviceType kAutocastDevices[] = {c10::DeviceType::CPU, c10::DeviceType::CUDA};

// Autocast as the forward had it, for the recomputation; the state before it comes back after.
class AutocastAsInForward {
 public:
  explicit AutocastAsInForward(AutogradContext* ctx) {
    for (std::size_t i = 0; i < 2; ++i) {
      const auto type = kAutocastDevices[i];
      before_[i] = {at::autocast::is_autocast_enabled(type), at::autocast::get_autocast_dtype(type)};
      const auto key = std::to_string(i);
      at::autocast::set_autocast_enabled(type, ctx->saved_data["autocast" + key].toBool());
      at::autocast::set_autocast_dtype(type, ctx->saved_data["autocast_dtype" + key].toScalarType());
    }
    at::autocast::increment_nesting();
  }
  ~AutocastAsInForward() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    for (std::size_t i = 0; i < 2; ++i) {
      at::autocast::set_autocast_enabled(kAutocastDevices[i], before_[i].first);
      at::autocast::set_autocast_dtype(kAutocastDevices[i], before_[i].second);
    }
  }
  AutocastAsInForward(const AutocastAsInForward&) = delete;
  AutocastAsInForward& operator=(const AutocastAsInForward&) = delete;

  static void save(AutogradContext* ctx) {
    for (std::size_t i = 0; i < 2; ++i) {
      const auto key = std::to_string(i);
      ctx->saved_data["autocast" + key] = at::autocast::is_autocast_enabled(kAutocastDevices[i]);
      ctx->saved_data["autocast_dtype" + key] = at::autocast::get_autocast_dtype(kAutocastDevices[i]);
    }
  }

 private:
  std::pair<bool, c10::ScalarType> before_[2];
};

// The generators to rewind: none for a block that draws no random numbers (so that a captured
// step can recompute it), else the CPU's and the input's GPU's.
std::vector<c10::Device> generators_of(const at::Tensor& input, const CheckpointableBlock& block) {
  if (!block.draws_random_numbers()) return {};
  std::vector<c10::Device> devices{c10::Device(c10::kCPU)};
  if (input.is_cuda()) devices.push_back(input.device());
  return devices;
}

// The block's buffers (batch-norm running statistics), copied, to put back after the recomputation
// updated them a second time.
std::vector<std::pair<at::Tensor, at::Tensor>> snapshot_buffers(CheckpointableBlock& block) {
  std::vector<std::pair<at::Tensor, at::Tensor>> kept;
  if (auto* module = dynamic_cast<torch::nn::Module*>(&block))
    for (const auto& buffer : module->buffers()) kept.emplace_back(buffer, buffer.clone());
  return kept;
}

// The block lives as long as the model, beyond every autograd graph of a step, so the graph keeps
// a plain pointer to it, stored as a number in the context's saved data.
CheckpointableBlock& block_of(AutogradContext* ctx) {
  return *reinterpret_cast<CheckpointableBlock*>(static_cast<std::intptr_t>(ctx->saved_data["block"].toInt()));
}

class RecomputeFunction : public torch::autograd::Function<RecomputeFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, CheckpointableBlock* block) {
    ctx->save_for_backward({input});
    ctx->saved_data["block"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(block));
    AutocastAsInForward::save(ctx);
    const auto devices = generators_of(input, *block);
    for (std::size_t i = 0; i < devices.size(); ++i) ctx->saved_data["rng" + std::to_string(i)] = rng_state(devices[i]);
    return block->block_forward(input);  // autograd records nothing here (Function::apply turned it off)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto input = ctx->get_saved_variables()[0];
    auto& block = block_of(ctx);
    const auto devices = generators_of(input, block);
    std::vector<at::Tensor> now;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      now.push_back(rng_state(devices[i]));
      set_rng_state(devices[i], ctx->saved_data["rng" + std::to_string(i)].toTensor());
    }
    const auto buffers = snapshot_buffers(block);
    const auto detached = input.detach().requires_grad_(true);
    at::Tensor output;
    {
      at::AutoGradMode recording(true);
      AutocastAsInForward autocast(ctx);
      output = block.block_forward(detached);
    }
    for (std::size_t i = 0; i < devices.size(); ++i) set_rng_state(devices[i], now[i]);
    torch::autograd::backward({output}, {grads[0]});
    {  // after the backward: batch norm's backward reads the running statistics it was given
      at::NoGradGuard no_grad;
      for (const auto& [buffer, kept] : buffers) buffer.copy_(kept);
    }
    ctx->saved_data.clear();  // the generators' states: a graph kept alive after its backward need not hold them
    return {detached.grad(), at::Tensor()};
  }
};

}  // namespace

at::Tensor CheckpointableBlock::run_block(const at::Tensor& input) {
  const auto* module = dynamic_cast<const torch::nn::Module*>(this);
  const bool training = module == nullptr || module->is_training();
  if (!recompute_ || !training || !at::GradMode::is_enabled() || !input.requires_grad()) return block_forward(input);
  return RecomputeFunction::apply(input, this);
}

}  // namespace gputrain::train

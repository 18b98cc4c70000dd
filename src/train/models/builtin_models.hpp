#pragma once
// Factories of the built-in models (registered under these names by model_registry.cpp).

#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <c10/core/Device.h>

#include <cstddef>
#include <string>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model_registry.hpp"

namespace gputrain::train::models {

/// nn::Sequential with a plain Tensor -> Tensor forward, which AnyModule can hold. Its children
/// keep Sequential's names ("0.weight", "1.weight", ...), as Python's nn.Sequential names them.
struct PlainSequentialImpl : torch::nn::SequentialImpl {
  using SequentialImpl::SequentialImpl;
  at::Tensor forward(at::Tensor input) { return SequentialImpl::forward(std::move(input)); }
};
TORCH_MODULE(PlainSequential);

/// Throws UsageError unless one sample has `dims` dimensions, the `layout` (e.g. "[channels,
/// height, width]") `model` reads; `example` is a data.shape that fits, for synthetic data.
void require_sample_dims(const ModelSpec& spec, std::size_t dims, const std::string& model, const std::string& layout,
                         const std::string& example);

/// model.activation's module (relu, gelu, silu, tanh), as the MLP's hidden layers and the
/// transformer's feed-forward blocks apply it.
torch::nn::AnyModule make_activation(const std::string& name);

/// mlp: flatten, then [Linear, norm, activation, dropout] per model.hidden width, then Linear.
torch::nn::AnyModule make_mlp(const ModelSpec& spec);
/// small_cnn: three conv-BN-ReLU blocks (width, 2x, 4x channels), global pool, Linear.
torch::nn::AnyModule make_small_cnn(const ModelSpec& spec);
/// resnet18/34/50 as torchvision builds them, with a CIFAR (3x3) or ImageNet (7x7 + pool) stem.
torch::nn::AnyModule make_resnet(const ModelSpec& spec, int depth);
/// transformer: linear embedding of [sequence, features], learned positions, encoder, mean pool.
torch::nn::AnyModule make_transformer(const ModelSpec& spec);

/// For the run's notes: how the transformer's attention runs in training on `device` at
/// `precision`, e.g. "attention: flash attention (scaled_dot_product_attention's choice for bf16,
/// 4 heads of 32)".
std::string transformer_attention_note(const ModelSpec& spec, c10::Device device, Precision precision);

}  // namespace gputrain::train::models

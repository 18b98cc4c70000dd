#pragma once
// The built-in transformer as LibTorch's own modules assemble it (nn::TransformerEncoder, with its
// multi-head attention written out in bmm and softmax): the reference that gputrain's encoder,
// which calls scaled_dot_product_attention, is checked against. Same parameter names as the model.
// LibTorch's layer has no norm_first: with it, the layers' own modules are composed as PyTorch's
// norm_first=True composes them.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/transformercoder.h>
#include <torch/nn/modules/transformerlayer.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <variant>

#include "gputrain/train/model.hpp"

namespace gputrain::test_support {

struct LibTorchTransformerImpl : torch::nn::Module {
  LibTorchTransformerImpl(std::int64_t sequence, std::int64_t features, std::int64_t d_model, std::int64_t heads, std::int64_t ff_dim,
                          std::int64_t layers, std::int64_t outputs, double dropout = 0.0, const std::string& activation = "relu",
                          bool pre_norm = false)
      : norm_first(pre_norm) {
    namespace nn = torch::nn;
    embed = register_module("embed", nn::Linear(features, d_model));
    positions = register_parameter("positions", torch::randn({1, sequence, d_model}) * 0.02);
    auto options = nn::TransformerEncoderLayerOptions(d_model, heads).dim_feedforward(ff_dim).dropout(dropout);
    if (activation == "gelu") options.activation(torch::kGELU);
    auto layer = nn::TransformerEncoderLayer(options);
    encoder = register_module("encoder", nn::TransformerEncoder(nn::TransformerEncoderOptions(layer, layers)));
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({d_model})));
    head = register_module("head", nn::Linear(d_model, outputs));
  }
  at::Tensor forward(const at::Tensor& x) {  // LibTorch's encoder is sequence-first
    auto h = (embed(x) + positions).transpose(0, 1);
    if (!norm_first) {
      h = encoder(h);
    } else {
      for (const auto& module : *encoder->layers) {
        auto& layer = *module->as<torch::nn::TransformerEncoderLayerImpl>();
        auto normed = layer.norm1(h);
        h = h + layer.dropout1(std::get<0>(layer.self_attn(normed, normed, normed)));
        const auto inner = layer.linear1(layer.norm2(h));
        const auto activated =
            std::holds_alternative<torch::enumtype::kGELU>(layer.options.activation()) ? torch::gelu(inner) : torch::relu(inner);
        h = h + layer.dropout2(layer.linear2(layer.dropout(activated)));
      }
    }
    return head(norm(h.transpose(0, 1).mean(1)));
  }
  // Takes every parameter from `model` by name; throws when a name or a shape differs.
  void copy_from(train::Model& model) {
    torch::NoGradGuard no_grad;
    auto mine = named_parameters();
    for (const auto& [name, tensor] : model.named_state()) mine[name].copy_(tensor);
    TORCH_CHECK(mine.size() == model.named_state().size(), "the models' parameters differ in number");
  }
  bool norm_first;
  torch::nn::Linear embed{nullptr};
  at::Tensor positions;
  torch::nn::TransformerEncoder encoder{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(LibTorchTransformer);

}  // namespace gputrain::test_support

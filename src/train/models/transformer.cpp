#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/transformercoder.h>
#include <torch/nn/modules/transformerlayer.h>
#include <torch/nn/pimpl.h>

#include "builtin_models.hpp"

namespace gputrain::train::models {
namespace {

namespace nn = torch::nn;

// A sample is [sequence, features]: each position is embedded linearly, given a learned position
// vector, encoded, and the sequence is mean-pooled into one vector for the classifier head.
struct TransformerClassifierImpl : nn::Module {
  explicit TransformerClassifierImpl(const ModelSpec& spec) {
    const auto& c = spec.config;
    const std::int64_t sequence = spec.input_shape[0], features = spec.input_shape[1];
    embed = register_module("embed", nn::Linear(features, c.d_model));
    positions = register_parameter("positions", torch::randn({1, sequence, c.d_model}) * 0.02);
    auto layer = nn::TransformerEncoderLayer(
        nn::TransformerEncoderLayerOptions(c.d_model, c.heads).dim_feedforward(c.ff_dim).dropout(c.dropout));
    encoder = register_module("encoder", nn::TransformerEncoder(nn::TransformerEncoderOptions(layer, c.layers)));
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({c.d_model})));
    head = register_module("head", nn::Linear(c.d_model, spec.outputs));
  }
  at::Tensor forward(const at::Tensor& x) {
    auto h = embed(x) + positions;                  // [N, S, D]
    h = encoder(h.transpose(0, 1)).transpose(0, 1);  // LibTorch's encoder is sequence-first
    return head(norm(h.mean(1)));
  }
  nn::Linear embed{nullptr};
  at::Tensor positions;
  nn::TransformerEncoder encoder{nullptr};
  nn::LayerNorm norm{nullptr};
  nn::Linear head{nullptr};
};
TORCH_MODULE(TransformerClassifier);

}  // namespace

torch::nn::AnyModule make_transformer(const ModelSpec& spec) {
  require_sample_dims(spec, 2, "transformer", "[sequence, features]", "[32, 16]");
  return torch::nn::AnyModule(TransformerClassifier(spec));
}

}  // namespace gputrain::train::models

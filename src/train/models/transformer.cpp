#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "builtin_models.hpp"
#include "gputrain/train/activation_checkpoint.hpp"
#include "gputrain/train/amp.hpp"
#include "train/models/layers/cpu_dropout.hpp"
#include "train/models/layers/cpu_linear.hpp"
#include "train/models/layers/weight_casts.hpp"

namespace gputrain::train::models {
namespace {

namespace nn = torch::nn;

// A Linear's forward, with its products on oneDNN where this CPU runs them faster (cpu_linear.hpp).
at::Tensor project(const nn::Linear& layer, const at::Tensor& x) { return linear(x, layer->weight, layer->bias); }

std::uint64_t tensor_bytes(const std::vector<at::Tensor>& tensors) {
  std::uint64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.nbytes();
  return bytes;
}

// The encoder is written here rather than taken from LibTorch's nn::TransformerEncoderLayer, whose
// multi-head attention (a) compares query, key and value with torch::equal on every forward, two
// host synchronisations per layer on a GPU, (b) materialises the [heads, sequence, sequence]
// attention weights with two bmm calls and averages them over heads for a caller that discards
// them, and (c) is sequence-first, so a batch-first model transposes around it. PyTorch's Python
// module calls scaled_dot_product_attention instead, which runs fused kernels (flash or
// memory-efficient attention on GPUs, a tiled kernel on CPUs when attention dropout is off) in
// memory linear in the sequence; this does the same. The parameters keep LibTorch's and Python's
// names, shapes and initialisation, so weights move between them (and earlier runs) unchanged.

// Self-attention with the three projections in one [3 * d_model, d_model] matrix, as PyTorch's.
// Cloneable (reset() builds it) so that the encoder can clone a layer as LibTorch's does.
struct SelfAttentionImpl : nn::Cloneable<SelfAttentionImpl>, AutocastWeights {
  SelfAttentionImpl(std::int64_t d_model, std::int64_t head_count, double dropout)
      : width(d_model), heads(head_count), attention_dropout(dropout) {
    reset();
  }
  void reset() override {
    // LibTorch's order of random draws: out_proj as a Linear, then in_proj (Xavier), biases zero.
    in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * width, width}));
    in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * width}));
    out_proj = register_module("out_proj", nn::Linear(width, width));
    nn::init::xavier_uniform_(in_proj_weight);
    nn::init::zeros_(in_proj_bias);
    nn::init::zeros_(out_proj->bias);
  }
  void add_autocast_weights(std::vector<at::Tensor*>& slots) override { slots.insert(slots.end(), {&in_proj_weight, &in_proj_bias}); }
  at::Tensor forward(const at::Tensor& x) {  // x: [batch, sequence, d_model]
    const auto batch = x.size(0), sequence = x.size(1);
    // [batch, sequence, 3, heads, head_dim] -> 3 x [batch, heads, sequence, head_dim], as views.
    const auto qkv = linear(x, in_proj_weight, in_proj_bias).view({batch, sequence, 3, heads, width / heads}).permute({2, 0, 3, 1, 4});
    const auto attended = attend(qkv[0], qkv[1], qkv[2]);
    return project(out_proj, attended.transpose(1, 2).reshape({batch, sequence, width}));
  }
  // scaled_dot_product_attention, but on the CPU with dropout written out: the CPU's fused kernel
  // has no dropout, so that call would compute the same with at::dropout's one-thread mask.
  at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const {
    const double p = is_training() ? attention_dropout : 0.0;
    if (p == 0.0 || !q.device().is_cpu()) return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, p);
    const auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
    return at::matmul(cpu_dropout(at::softmax(scores, -1), p, true), v);
  }
  std::int64_t width, heads;
  double attention_dropout;
  at::Tensor in_proj_weight, in_proj_bias;
  nn::Linear out_proj{nullptr};
};
TORCH_MODULE(SelfAttention);

// PyTorch's TransformerEncoderLayer: post-norm with a ReLU feed-forward block by default;
// model.norm_first and model.activation as its norm_first and activation.
struct EncoderLayerImpl : nn::Cloneable<EncoderLayerImpl>, CheckpointableBlock {
  explicit EncoderLayerImpl(ModelConfig config) : c(std::move(config)) { reset(); }
  void reset() override {
    self_attn = register_module("self_attn", SelfAttention(c.d_model, c.heads, c.dropout));
    linear1 = register_module("linear1", nn::Linear(c.d_model, c.ff_dim));
    linear2 = register_module("linear2", nn::Linear(c.ff_dim, c.d_model));
    norm1 = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({c.d_model})));
    norm2 = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({c.d_model})));
    activation = make_activation(c.activation);  // no parameters: not registered, as in PyTorch's layer
  }
  at::Tensor forward(const at::Tensor& x) { return run_block(x); }
  bool draws_random_numbers() const override { return c.dropout > 0; }  // attention's and the three dropouts
  at::Tensor block_forward(const at::Tensor& x) override {
    if (c.norm_first) {  // pre-norm: x + block(norm(x)), as PyTorch's norm_first=True
      const auto h = x + drop(self_attn(norm1(x)));
      return h + feed_forward(norm2(h));
    }
    const auto h = norm1(x + drop(self_attn(x)));
    return norm2(h + feed_forward(h));
  }
  // linear2(dropout(activation(linear1(h)))), then dropout2, as PyTorch's _ff_block and dropout2.
  at::Tensor feed_forward(const at::Tensor& h) { return drop(project(linear2, drop(activation.forward(project(linear1, h))))); }
  // PyTorch's layer has three Dropout modules (dropout, dropout1, dropout2), with nothing to save.
  at::Tensor drop(const at::Tensor& t) const { return cpu_dropout(t, c.dropout, is_training()); }
  ModelConfig c;
  SelfAttention self_attn{nullptr};
  nn::Linear linear1{nullptr}, linear2{nullptr};
  nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  nn::AnyModule activation;
};
TORCH_MODULE(EncoderLayer);

// A sample is [sequence, features]: each position is embedded linearly, given a learned position
// vector, encoded, and the sequence is mean-pooled into one vector for the classifier head.
struct TransformerClassifierImpl : nn::Module {
  explicit TransformerClassifierImpl(const ModelSpec& spec) {
    const auto& c = spec.config;
    const std::int64_t sequence = spec.input_shape[0], features = spec.input_shape[1];
    embed = register_module("embed", nn::Linear(features, c.d_model));
    positions = register_parameter("positions", torch::randn({1, sequence, c.d_model}) * 0.02);
    // Every layer starts from the same weights, as PyTorch's TransformerEncoder (deep copies of
    // one layer) and LibTorch's (clones) start them; registered as "encoder.layers.N" like theirs.
    const EncoderLayer first(c);
    require_room_for_copies(spec, tensor_bytes(first->parameters()), c.layers, "encoder layer");
    layers = register_module("encoder", std::make_shared<nn::Module>())->register_module("layers", nn::ModuleList());
    for (std::int64_t i = 0; i < c.layers; ++i) layers->push_back(first->clone());
    norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({c.d_model})));
    head = register_module("head", nn::Linear(c.d_model, spec.outputs));
  }
  at::Tensor forward(const at::Tensor& x) {
    auto h = project(embed, x) + positions;  // [batch, sequence, d_model]
    for (const auto& layer : *layers) h = layer->as<EncoderLayerImpl>()->forward(h);
    return project(head, norm(h.mean(1)));
  }
  nn::Linear embed{nullptr};
  at::Tensor positions;
  nn::ModuleList layers{nullptr};
  nn::LayerNorm norm{nullptr};
  nn::Linear head{nullptr};
};
TORCH_MODULE(TransformerClassifier);

}  // namespace

std::string transformer_attention_note(const ModelSpec& spec, c10::Device device, Precision precision) {
  const auto& c = spec.config;
  if (device.is_cpu() && c.dropout > 0)
    return "attention: written out, its dropout masks drawn in vector lanes (the CPU's fused kernel has no dropout)";
  const std::int64_t head_dim = c.d_model / c.heads, sequence = spec.input_shape.at(0);
  const auto dtype = compute_dtype(precision);
  const std::string layout = precision == Precision::bf16_mixed ? "bf16" : precision == Precision::fp16_mixed ? "fp16" : "fp32";
  const std::string shape = std::to_string(c.heads) + " heads of " + std::to_string(head_dim);
  try {
    // The backend scaled_dot_product_attention dispatches to, asked with a training step's layout,
    // dtype and device (one sample: the choice does not depend on the batch).
    const auto q = at::empty({1, c.heads, sequence, head_dim}, at::TensorOptions().dtype(dtype).device(device)).requires_grad_();
    const auto backend = at::_fused_sdp_choice(q, q, q, /*attn_mask=*/{}, c.dropout);
    static const char* const names[] = {"written out (scaled_dot_product_attention's math fallback)", "flash attention",
                                        "memory-efficient attention", "cuDNN attention"};
    const std::string name = backend >= 0 && backend < 4 ? names[backend] : "backend " + std::to_string(backend);
    return "attention: " + name + " (scaled_dot_product_attention's choice for " + layout + ", " + shape +
           (device.is_cpu() ? ", on the CPU)" : ")");
  } catch (const std::exception&) {  // a note is not worth a run: the forward pass asks again and says why
    return "attention: scaled_dot_product_attention (" + layout + ", " + shape + "; its kernel could not be asked in advance)";
  }
}

torch::nn::AnyModule make_transformer(const ModelSpec& spec) {
  require_sample_dims(spec, 2, "transformer", "[sequence, features]", "[32, 16]");
  return torch::nn::AnyModule(TransformerClassifier(spec));
}

}  // namespace gputrain::train::models

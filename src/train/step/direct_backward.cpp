#include "direct_backward.hpp"

#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <array>

#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/train/model.hpp"
#include "train/models/layers/cpu_dropout.hpp"
#include "train/models/layers/cpu_matmul.hpp"

namespace gputrain::train {
namespace {

enum class Kind { flatten, linear, layer_norm, relu, gelu, silu, tanh, dropout };

// Adds `grad` to the parameter's gradient, as AccumulateGrad does outside grad mode: the first
// one becomes .grad() (these are fresh contiguous tensors), later ones are added in place.
void accumulate(const at::Tensor& parameter, at::Tensor grad) {
  auto& slot = parameter.mutable_grad();
  if (slot.defined()) slot.add_(grad);
  else slot = std::move(grad);
}

}  // namespace

struct DirectBackward::Layer {
  Kind kind;
  std::shared_ptr<torch::nn::Module> module;  // keeps the typed pointers below valid
  torch::nn::LinearImpl* linear = nullptr;
  torch::nn::LayerNormImpl* norm = nullptr;
  torch::nn::DropoutImpl* dropout = nullptr;  // at::dropout's draws; or the built-in models':
  ThreadedDropoutImpl* threaded_dropout = nullptr;
  std::string gelu_approximate;
  bool relu_in_place = false;  // its input is a fresh tensor that no layer keeps for its backward
  // What forward keeps for backward, as autograd's nodes would keep it.
  at::Tensor input, output, mean, rstd, noise;

  bool has_parameters() const { return kind == Kind::linear || (kind == Kind::layer_norm && norm->weight.defined()); }
  void forget() { input = output = mean = rstd = noise = at::Tensor(); }
};

DirectBackward::DirectBackward(std::vector<Layer> layers) : layers_(std::move(layers)) {
  while (first_with_parameters_ < layers_.size() && !layers_[first_with_parameters_].has_parameters()) ++first_with_parameters_;
  for (const auto& layer : layers_)
    if (layer.kind == Kind::linear) outputs_ = layer.linear->options.out_features();
}

DirectBackward::~DirectBackward() = default;

std::unique_ptr<DirectBackward> DirectBackward::plan(Model& model, const TrainConfig& train, c10::Device device) {
  if (train.precision != Precision::fp32 || !device.is_cpu()) return nullptr;
  auto* sequential = dynamic_cast<torch::nn::SequentialImpl*>(model.module());
  if (!sequential) return nullptr;
  std::vector<Layer> layers;
  bool any_linear = false;
  for (const auto& child : sequential->children()) {
    Layer layer{};
    layer.module = child;
    if (auto* flatten = dynamic_cast<torch::nn::FlattenImpl*>(child.get())) {
      // Only a leading flatten of each sample: the layers after it then see [N, features].
      if (!layers.empty() || flatten->options.start_dim() != 1 || flatten->options.end_dim() != -1) return nullptr;
      layer.kind = Kind::flatten;
    } else if ((layer.linear = dynamic_cast<torch::nn::LinearImpl*>(child.get()))) {
      layer.kind = Kind::linear;
      any_linear = true;
    } else if ((layer.norm = dynamic_cast<torch::nn::LayerNormImpl*>(child.get()))) {
      if (layer.norm->options.normalized_shape().size() != 1) return nullptr;
      layer.kind = Kind::layer_norm;
    } else if (auto* relu = dynamic_cast<torch::nn::ReLUImpl*>(child.get())) {
      if (relu->options.inplace()) return nullptr;
      layer.kind = Kind::relu;
      layer.relu_in_place = !layers.empty() && (layers.back().kind == Kind::linear || layers.back().kind == Kind::layer_norm);
    } else if (auto* gelu = dynamic_cast<torch::nn::GELUImpl*>(child.get())) {
      layer.kind = Kind::gelu;
      layer.gelu_approximate = gelu->options.approximate();
    } else if (dynamic_cast<torch::nn::SiLUImpl*>(child.get())) {
      layer.kind = Kind::silu;
    } else if (dynamic_cast<torch::nn::TanhImpl*>(child.get())) {
      layer.kind = Kind::tanh;
    } else if ((layer.dropout = dynamic_cast<torch::nn::DropoutImpl*>(child.get()))) {
      if (layer.dropout->options.p() >= 1.0 || layer.dropout->options.inplace()) return nullptr;
      layer.kind = Kind::dropout;
    } else if ((layer.threaded_dropout = dynamic_cast<ThreadedDropoutImpl*>(child.get()))) {
      if (layer.threaded_dropout->p >= 1.0) return nullptr;
      layer.kind = Kind::dropout;
    } else {
      return nullptr;  // a layer this does not know: autograd trains the model
    }
    layers.push_back(std::move(layer));
  }
  if (!any_linear) return nullptr;
  for (const auto& p : model.parameters())
    if (!p.requires_grad()) return nullptr;  // frozen layers: autograd knows which gradients to skip
  auto direct = std::unique_ptr<DirectBackward>(new DirectBackward(std::move(layers)));
  direct->label_smoothing_ = train.label_smoothing;
  direct->matmul_ = cpu_matmul_for_this_machine();
  return direct;
}

bool DirectBackward::takes(const at::Tensor& inputs, const at::Tensor& targets, bool classification) const {
  if (!inputs.is_cpu() || inputs.scalar_type() != at::kFloat || inputs.dim() < 2 || inputs.size(0) == 0) return false;
  if (layers_.front().kind != Kind::flatten && inputs.dim() != 2) return false;
  if (classification) return targets.scalar_type() == at::kLong && targets.dim() == 1 && targets.size(0) == inputs.size(0);
  return targets.scalar_type() == at::kFloat && targets.dim() == 2 && targets.size(0) == inputs.size(0) && targets.size(1) == outputs_;
}

at::Tensor DirectBackward::train(const at::Tensor& inputs, const at::Tensor& targets, bool classification, const at::Tensor& class_weights,
                                 double weight, const std::function<void()>& after_forward, dist::GradientSync* sync) {
  at::NoGradGuard no_graph;  // the point: no graph is recorded, backward below is explicit
  // What the layers keep is dropped however this ends: after an out-of-memory error the OOM
  // handler retries with half the micro-batch and needs this attempt's activations gone.
  struct ForgetOnExit {
    std::vector<Layer>& layers;
    ~ForgetOnExit() {
      for (auto& layer : layers) layer.forget();
    }
  } forget_on_exit{layers_};

  // Forward: each layer's module forward, keeping what its backward reads.
  at::Tensor x = inputs;
  for (auto& layer : layers_) {
    switch (layer.kind) {
      case Kind::flatten:
        x = x.flatten(1);
        break;
      case Kind::linear:
        layer.input = x;
        x = linear_forward(x, *layer.linear);
        break;
      case Kind::layer_norm: {
        layer.input = x;
        const auto& o = layer.norm->options;
        auto [out, mean, rstd] = at::native_layer_norm(x, o.normalized_shape(), layer.norm->weight, layer.norm->bias, o.eps());
        layer.mean = std::move(mean);
        layer.rstd = std::move(rstd);
        x = std::move(out);
        break;
      }
      case Kind::relu:
        x = layer.relu_in_place ? at::relu_(x) : at::relu(x);
        layer.output = x;
        break;
      case Kind::gelu:
        layer.input = x;
        x = at::gelu(x, layer.gelu_approximate);
        break;
      case Kind::silu:
        layer.input = x;
        x = at::silu(x);
        break;
      case Kind::tanh:
        x = at::tanh(x);
        layer.output = x;
        break;
      case Kind::dropout: {
        // The same draws from the same generator as the module's forward: threaded_dropout's, or
        // at::dropout's CPU path (ATen's _dropout_impl) for an nn::Dropout.
        const double p = layer.threaded_dropout ? layer.threaded_dropout->p : layer.dropout->options.p();
        const bool training = layer.threaded_dropout ? layer.threaded_dropout->is_training() : layer.dropout->is_training();
        if (p == 0 || !training) break;
        if (layer.threaded_dropout) {
          layer.noise = dropout_noise(x, p);
        } else {
          layer.noise = at::empty_like(x);
          layer.noise.bernoulli_(1 - p);
          layer.noise.div_(1 - p);
        }
        x = x.mul(layer.noise);
        break;
      }
    }
  }

  // The loss, as at::cross_entropy_loss and at::mse_loss compute it, and its gradient.
  at::Tensor loss, grad;
  const auto seed = at::full({}, weight, x.options());  // d(loss * weight) / d(loss)
  if (classification) {
    const auto log_probs = at::_log_softmax(x, 1, false);
    const double eps = label_smoothing_;
    const auto classes = static_cast<double>(log_probs.size(1)), rows = static_cast<double>(log_probs.size(0));
    if (class_weights.defined()) {
      // As train::loss_of with class weights: the mean over samples of w[y] * the sample's loss,
      // (1 - eps) * nll + eps / K * -sum(log_probs). Each log-probability's gradient is then
      // -w[y] / N * ((1 - eps) on the class + eps / K on every class).
      const auto row_weights = class_weights.index_select(0, targets);
      auto [each, total_weight] = at::nll_loss_forward(log_probs, targets, {}, at::Reduction::None, -100);
      if (eps > 0) each = each * (1 - eps) + log_probs.sum(1).neg() * (eps / classes);
      loss = (each * row_weights).mean();
      if (after_forward) after_forward();
      const auto per_row = row_weights * (seed / rows);  // d loss / d (each sample's loss)
      grad = at::nll_loss_backward(eps > 0 ? per_row * (1 - eps) : per_row, log_probs, targets, {}, at::Reduction::None, -100, total_weight);
      if (eps > 0) grad.sub_((per_row * (eps / classes)).unsqueeze(1));
    } else if (eps > 0) {
      // As at::cross_entropy_loss with label_smoothing: (1 - eps) * nll + eps / K * mean(-sum(log_probs)),
      // whose gradient on each log-probability adds -eps / (N * K) to the nll's share.
      auto [nll, total_weight] = at::nll_loss_forward(log_probs, targets, {}, at::Reduction::Mean, -100);
      loss = nll * (1 - eps) + log_probs.sum(1).neg().mean() * (eps / classes);
      if (after_forward) after_forward();
      grad = at::nll_loss_backward(seed * (1 - eps), log_probs, targets, {}, at::Reduction::Mean, -100, total_weight);
      grad.sub_(seed * (eps / (rows * classes)));
    } else {
      auto [nll, total_weight] = at::nll_loss_forward(log_probs, targets, {}, at::Reduction::Mean, -100);
      loss = std::move(nll);
      if (after_forward) after_forward();
      grad = at::nll_loss_backward(seed, log_probs, targets, {}, at::Reduction::Mean, -100, total_weight);
    }
    grad = at::_log_softmax_backward_data(grad, log_probs, 1, x.scalar_type());
  } else {
    loss = at::mse_loss(x, targets, at::Reduction::Mean);
    if (after_forward) after_forward();
    grad = at::mse_loss_backward(seed, x, targets, at::Reduction::Mean);
  }
  if (weight != 1.0) loss = loss.mul(weight);

  // Each gradient as AccumulateGrad adds it, then to the all-reduce as its hook would.
  const auto give = [sync](const at::Tensor& parameter, at::Tensor gradient) {
    accumulate(parameter, std::move(gradient));
    if (sync) sync->gradient_ready(parameter);
  };
  // Backward, last layer first, down to the first layer with parameters.
  for (std::size_t i = layers_.size(); i-- > first_with_parameters_;) {
    auto& layer = layers_[i];
    const bool input_needs_grad = i > first_with_parameters_;
    switch (layer.kind) {
      case Kind::flatten:
        break;  // before every layer with parameters: never reached
      case Kind::linear: {
        // addmm's backward for weight.t() (column-major): grad.t() @ input, then the bias's sum.
        const auto& weight_tensor = layer.linear->weight;
        give(weight_tensor, matmul(grad.t(), layer.input, matmul_));
        if (layer.linear->bias.defined()) give(layer.linear->bias, grad.sum(0));
        if (input_needs_grad) grad = matmul(grad, weight_tensor, matmul_);
        break;
      }
      case Kind::layer_norm: {
        const auto& norm = *layer.norm;
        const std::array<bool, 3> mask{input_needs_grad, norm.weight.defined(), norm.bias.defined()};
        auto [d_input, d_weight, d_bias] = at::native_layer_norm_backward(grad, layer.input, norm.options.normalized_shape(),
                                                                          layer.mean, layer.rstd, norm.weight, norm.bias, mask);
        if (mask[1]) give(norm.weight, std::move(d_weight));
        if (mask[2]) give(norm.bias, std::move(d_bias));
        grad = std::move(d_input);
        break;
      }
      case Kind::relu:
        grad = at::threshold_backward(grad, layer.output, 0);
        break;
      case Kind::gelu:
        grad = at::gelu_backward(grad, layer.input, layer.gelu_approximate);
        break;
      case Kind::silu:
        grad = at::silu_backward(grad, layer.input);
        break;
      case Kind::tanh:
        grad = at::tanh_backward(grad, layer.output);
        break;
      case Kind::dropout:
        if (layer.noise.defined()) grad = grad.mul(layer.noise);
        break;
    }
    layer.forget();  // as autograd frees a node's saved tensors once it has run
  }
  return loss.detach();
}

// With MKL, at::linear as the module's forward runs it (addmm: the bias is where the sum starts).
at::Tensor DirectBackward::linear_forward(const at::Tensor& x, const torch::nn::LinearImpl& linear) const {
  if (matmul_ == CpuMatmul::mkl) return at::linear(x, linear.weight, linear.bias);
  auto y = matmul(x, linear.weight.t(), matmul_);
  return linear.bias.defined() ? y.add_(linear.bias) : y;
}

std::string DirectBackward::describe() const {
  return std::to_string(layers_.size()) + " layers" + (matmul_ == CpuMatmul::onednn ? ", oneDNN's matrix products" : "");
}

}  // namespace gputrain::train

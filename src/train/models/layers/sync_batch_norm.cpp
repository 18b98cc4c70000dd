// Synchronised batch norm, as PyTorch's SyncBatchNorm computes it. Forward: each rank's per-channel
// mean and variance and its sample count are gathered, combined into the global batch's (Chan et
// al.'s parallel variance, so no sum of squares cancels), and every rank normalises with them.
// Backward: the sums of dy and dy*(x - mean) are summed over ranks, which gives each rank its
// inputs' share of the global batch's gradient. Weight and bias gradients stay local: the
// gradient all-reduce sums them like any other. On a GPU the per-rank passes are ATen's own
// SyncBatchNorm kernels (batch_norm_stats, _elemt, _backward_reduce, _backward_elemt, CUDA only);
// on a CPU the same formulas in plain tensor ops.
#include "sync_batch_norm.hpp"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/nn/module.h>

#include <cstdint>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/communicator.hpp"

namespace gputrain::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<std::int64_t> non_channel_dims(const at::Tensor& x) {
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel [C] tensor shaped to broadcast against x [N, C, ...].
at::Tensor per_channel(const at::Tensor& v, const at::Tensor& x) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(x.dim()), 1);
  shape[1] = v.size(0);
  return v.reshape(shape);
}

// This rank's [mean (C), biased variance (C), count (1)], in float.
at::Tensor local_statistics(const at::Tensor& input, double eps) {
  const auto channels = input.size(1);
  const auto options = input.options().dtype(at::kFloat);
  if (input.numel() == 0) return at::zeros({2 * channels + 1}, options);  // an empty pass counts nothing
  const double count = static_cast<double>(input.numel() / channels);
  at::Tensor mean, var;
  if (input.is_cuda()) {
    at::Tensor invstd;
    std::tie(mean, invstd) = at::batch_norm_stats(input, eps);
    var = invstd.pow(-2) - eps;
  } else {
    std::tie(var, mean) = at::var_mean(input.to(at::kFloat), non_channel_dims(input), /*correction=*/0, /*keepdim=*/false);
  }
  return at::cat({mean, var, at::full({1}, count, options)});
}

struct GlobalStatistics {
  at::Tensor mean, var, counts, total;  // [C], [C] biased, [world], the samples over all ranks
};

GlobalStatistics combine(const at::Tensor& rows, std::int64_t channels) {
  const auto counts = rows.select(1, 2 * channels);
  const auto weights = counts.unsqueeze(1);
  const auto total = counts.sum();
  const auto means = rows.narrow(1, 0, channels), vars = rows.narrow(1, channels, channels);
  const auto mean = (means * weights).sum(0) / total;
  const auto var = ((vars + (means - mean).pow(2)) * weights).sum(0) / total;
  return {mean, var, counts, total};
}

void update_running(const BatchNormTensors& layer, const GlobalStatistics& s, double momentum) {
  if (!layer.running_mean.defined()) return;
  const auto unbiased = s.var * s.total / (s.total - 1).clamp_min(1);  // PyTorch's running_var is unbiased
  layer.running_mean.mul_(1 - momentum).add_(s.mean.to(layer.running_mean.scalar_type()) * momentum);
  layer.running_var.mul_(1 - momentum).add_(unbiased.to(layer.running_var.scalar_type()) * momentum);
}

at::Tensor normalise(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& mean,
                     const at::Tensor& invstd, double eps) {
  if (input.numel() == 0) return at::empty_like(input);
  if (input.is_cuda()) return at::batch_norm_elemt(input, weight, bias, mean, invstd, eps);
  const auto scale = weight.defined() ? invstd * weight.to(at::kFloat) : invstd;
  auto out = (input.to(at::kFloat) - per_channel(mean, input)) * per_channel(scale, input);
  if (bias.defined()) out = out + per_channel(bias.to(at::kFloat), input);
  return out.to(input.scalar_type());
}

// The exchange outlives every autograd graph of the run (the layers and the trainer hold it), so
// the graph keeps a plain pointer to it, stored as a number in the context's saved data.
BatchNormSync& sync_of(AutogradContext* ctx) {
  return *reinterpret_cast<BatchNormSync*>(static_cast<std::intptr_t>(ctx->saved_data["sync"].toInt()));
}

class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const BatchNormTensors* layer, double momentum, BatchNormSync* sync, const std::string* name) {
    const double eps = layer->options.eps();
    const auto channels = input.size(1);
    const auto rows = sync->gather(local_statistics(input, eps), "batch-norm statistics of " + *name);
    const auto stats = combine(rows, channels);
    update_running(*layer, stats, momentum);
    const auto invstd = (stats.var + eps).rsqrt();
    ctx->save_for_backward({input, weight, stats.mean, invstd, stats.counts});
    ctx->saved_data["sync"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(sync));
    ctx->saved_data["name"] = *name;
    return normalise(input, weight, bias, stats.mean, invstd, eps);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &input = saved[0], &weight = saved[1], &mean = saved[2], &invstd = saved[3], &counts = saved[4];
    const auto grad_out = grads[0].contiguous(input.suggest_memory_format());
    const auto channels = input.size(1);
    const bool weight_g = ctx->needs_input_grad(1), bias_g = ctx->needs_input_grad(2);
    at::Tensor sum_dy, sum_dy_xmu, grad_weight, grad_bias, dy, xmu;
    if (input.numel() == 0) {
      sum_dy = at::zeros({channels}, mean.options());
      sum_dy_xmu = at::zeros({channels}, mean.options());
      if (weight_g) grad_weight = at::zeros_like(weight);
      if (bias_g) grad_bias = at::zeros_like(weight);
    } else if (input.is_cuda()) {
      std::tie(sum_dy, sum_dy_xmu, grad_weight, grad_bias) =
          at::batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, /*input_g=*/true, weight_g, bias_g);
    } else {
      dy = grad_out.to(at::kFloat);
      xmu = input.to(at::kFloat) - per_channel(mean, input);
      sum_dy = dy.sum(non_channel_dims(input));
      sum_dy_xmu = (dy * xmu).sum(non_channel_dims(input));
      if (weight_g) grad_weight = (sum_dy_xmu * invstd).to(weight.scalar_type());
      if (bias_g) grad_bias = sum_dy.to(weight.scalar_type());
    }
    at::Tensor grad_input;
    if (ctx->needs_input_grad(0)) {
      auto both = at::cat({sum_dy.to(at::kFloat), sum_dy_xmu.to(at::kFloat)});
      sync_of(ctx).sum(both, "batch-norm gradients of " + ctx->saved_data["name"].toStringRef());
      sum_dy = both.narrow(0, 0, channels);
      sum_dy_xmu = both.narrow(0, channels, channels);
      if (input.numel() == 0) {
        grad_input = at::empty_like(input);
      } else if (input.is_cuda()) {
        grad_input = at::batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, counts.to(at::kInt));
      } else {
        const auto total = counts.sum();
        const auto scale = weight.defined() ? invstd * weight.to(at::kFloat) : invstd;
        grad_input = (dy - per_channel(sum_dy / total, input) - xmu * per_channel(invstd.pow(2) * sum_dy_xmu / total, input)) *
                     per_channel(scale, input);
        grad_input = grad_input.to(input.scalar_type());
      }
    }
    return {grad_input, grad_weight, grad_bias, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor synchronised_batch_norm(const at::Tensor& input, const BatchNormTensors& layer, BatchNormSync& sync, const std::string& name) {
  double momentum = 0.0;
  if (layer.options.track_running_stats() && layer.num_batches_tracked.defined()) {
    layer.num_batches_tracked.add_(1);
    // No momentum: a cumulative average, as torch::nn's BatchNorm keeps it.
    momentum = layer.options.momentum() ? *layer.options.momentum() : 1.0 / layer.num_batches_tracked.item<double>();
  }
  return SyncBatchNormFunction::apply(input, layer.weight, layer.bias, &layer, momentum, &sync, &name);
}

BatchNormSync::BatchNormSync(dist::Communicator& communicator) : communicator_(communicator) {}

void BatchNormSync::begin_step(std::int64_t step, std::int64_t forwards) {
  step_ = step;
  forwards_ = forwards;
}

std::string BatchNormSync::in_step(const std::string& what) const { return what + " in step " + std::to_string(step_ + 1); }

at::Tensor BatchNormSync::gather(const at::Tensor& row, const std::string& what) {
  // A sum of rows that are zero but for each rank's own: the communicator's all-reduce is all it takes.
  auto rows = at::zeros({communicator_.size(), row.numel()}, row.options());
  rows.select(0, communicator_.rank()).copy_(row.reshape(-1));
  sum(rows, what);
  return rows;
}

void BatchNormSync::sum(at::Tensor& tensor, const std::string& what) { communicator_.all_reduce_sum(tensor, in_step(what))->wait(); }

void BatchNormSync::discard() {
  throw Error("out of memory in step " + std::to_string(step_ + 1) +
                  " with model.sync_batch_norm: the ranks' forward passes exchange batch statistics, so one rank cannot run its "
                  "share again in smaller pieces while the others wait in the exchange",
              "lower train.batch_size (or device.max_memory's share that batch_size: auto sizes for), or set model.sync_batch_norm: "
              "false; the last periodic checkpoint is intact");
}

BatchNormCensus count_batch_norms(torch::nn::Module& root) {
  BatchNormCensus census;
  for (const auto& item : root.named_modules("", /*include_self=*/true)) {
    auto& m = *item.value();
    if (dynamic_cast<SyncableNorm*>(&m))
      ++census.syncable;
    else if (m.as<torch::nn::BatchNorm1d>() || m.as<torch::nn::BatchNorm2d>() || m.as<torch::nn::BatchNorm3d>())
      census.plain.push_back(item.key());
  }
  return census;
}

std::int64_t attach_batch_norm_sync(torch::nn::Module& root, const std::shared_ptr<BatchNormSync>& sync) {
  std::int64_t attached = 0;
  for (const auto& item : root.named_modules("", /*include_self=*/true))
    if (auto* layer = dynamic_cast<SyncableNorm*>(item.value().get())) {
      layer->synchronise_with(sync, item.key());
      ++attached;
    }
  return attached;
}

}  // namespace gputrain::train

#include "grad_clip.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace gputrain::train {

namespace {

std::vector<at::Tensor> grads_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

at::Tensor norm_of(const std::vector<at::Tensor>& grads) {
  at::NoGradGuard no_grad;
  return at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2)), 2);
}

}  // namespace

at::Tensor global_grad_norm(const std::vector<at::Tensor>& params) { return gradients_norm(grads_of(params)); }

at::Tensor gradients_norm(const std::vector<at::Tensor>& gradients) {
  std::vector<at::Tensor> defined;
  for (const auto& g : gradients)
    if (g.defined()) defined.push_back(g);
  return defined.empty() ? at::Tensor() : norm_of(defined);
}

at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  auto grads = grads_of(params);
  if (grads.empty()) return {};
  at::NoGradGuard no_grad;
  auto total = norm_of(grads);
  const auto factor = at::clamp_max(max_norm / (total + 1e-6), 1.0);
  at::_foreach_mul_(grads, factor);
  return total;
}

}  // namespace gputrain::train

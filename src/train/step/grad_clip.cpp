#include "grad_clip.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace gputrain::train {

at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  at::NoGradGuard no_grad;
  const auto norms = at::_foreach_norm(grads, 2);
  const auto total = at::linalg_vector_norm(at::stack(norms), 2);
  const auto factor = at::clamp_max(max_norm / (total + 1e-6), 1.0);
  at::_foreach_mul_(grads, factor);
  return total;
}

}  // namespace gputrain::train

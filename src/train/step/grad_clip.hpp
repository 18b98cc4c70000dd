#pragma once
// Gradient clipping by the global L2 norm, on the device: LibTorch's clip_grad_norm_ returns the
// norm as a host double, a sync every step; this is PyTorch's foreach version, which keeps it a
// tensor, so the step can run ahead of the host or be captured in a CUDA graph.

#include <ATen/Tensor.h>

#include <vector>

namespace gputrain::train {

/// The joint L2 norm of the gradients of `params`, a device scalar (undefined when none has a
/// gradient): PyTorch's foreach rule, one norm per tensor then the norm of those.
at::Tensor global_grad_norm(const std::vector<at::Tensor>& params);

/// The same norm over `gradients` themselves (undefined ones skipped), e.g. the ones a captured step left.
at::Tensor gradients_norm(const std::vector<at::Tensor>& gradients);

/// Scales the gradients of `params` so their joint L2 norm is at most `max_norm` (PyTorch's rule:
/// by max_norm / (norm + 1e-6) when that is below 1). Returns the norm before clipping, a device
/// scalar (undefined when no parameter has a gradient).
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace gputrain::train

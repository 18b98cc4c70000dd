#pragma once
// The default random generators' states (the CPU's, or a CUDA device's): what a checkpoint saves
// and restores, and what a trainer's fit() starts from.

#include <ATen/ATen.h>

namespace gputrain::train {

at::Tensor rng_state(c10::Device device);
void set_rng_state(c10::Device device, const at::Tensor& state);

}  // namespace gputrain::train

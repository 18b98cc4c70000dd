#pragma once
// Activation checkpointing (train.activation_checkpointing): a block that recomputes keeps only
// its input from the forward pass and runs its forward again in backward, as
// torch.utils.checkpoint does, trading about one more forward of the block for its activations'
// memory. The built-in ResNet blocks and transformer layers are CheckpointableBlocks; a C++ model
// of your own makes its blocks one to take part.
//
// The recomputation replays exactly: the random generators (dropout's masks) and autocast are
// restored to the forward's, and batch-norm running statistics are left as the first forward
// updated them, so gradients are bit-identical to a run without it.

#include <ATen/core/Tensor.h>

namespace gputrain::train {

class CheckpointableBlock {
 public:
  virtual ~CheckpointableBlock() = default;
  /// The block's computation, as it runs in the forward pass and again in backward.
  virtual at::Tensor block_forward(const at::Tensor& input) = 0;
  /// From now on, training forwards that record gradients recompute this block in backward.
  void recompute_in_backward(bool on) { recompute_ = on; }
  bool recomputes_in_backward() const { return recompute_; }
  /// Whether block_forward draws random numbers in training (dropout). Only then are the random
  /// generators rewound for the recomputation, which a CUDA-graph capture cannot do: a block that
  /// says false recomputes inside a captured step. The default is the safe answer for any block.
  virtual bool draws_random_numbers() const { return true; }

 protected:
  /// What the block's forward() returns: block_forward(input), through the recomputation when
  /// it is on, gradients are recorded and the input needs them (else nothing would call backward).
  at::Tensor run_block(const at::Tensor& input);

 private:
  bool recompute_ = false;
};

}  // namespace gputrain::train

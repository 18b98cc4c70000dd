#pragma once
// train.activation_checkpointing at set-up: marks the blocks that recompute their forward in
// backward, by name, for the run and for the probes that size its batch alike.

#include <string>
#include <vector>

namespace gputrain::train {

class Model;

/// Marks the model's CheckpointableBlocks named by `names` (prefixes; {"*"}: all) and returns
/// the line to say. Throws UsageError for a model with no such block (mlp, small_cnn, a
/// TorchScript model) or a name that matches none, listing the blocks there are.
std::string recompute_blocks(Model& model, const std::vector<std::string>& names);

/// Whether a block that recomputes draws random numbers (dropout): the generators are then rewound
/// for the recomputation, which keeps its steps out of CUDA graphs.
bool recomputation_draws_random_numbers(Model& model);

}  // namespace gputrain::train

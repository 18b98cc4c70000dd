#include "optimizer_sharding_setup.hpp"

#include <torch/optim/sgd.h>

#include "gputrain/core/units.hpp"
#include "gputrain/dist/communicator.hpp"
#include "train/step/optimizer_shards.hpp"

namespace gputrain::train {
namespace {

// SGD without momentum keeps no state: there is nothing to split.
bool keeps_state(torch::optim::Optimizer& optimizer) {
  auto* sgd = dynamic_cast<torch::optim::SGD*>(&optimizer);
  if (!sgd) return true;
  for (const auto& group : sgd->param_groups())
    if (static_cast<const torch::optim::SGDOptions&>(group.options()).momentum() != 0) return true;
  return false;
}

}  // namespace

OptimizerShardingSetup shard_optimizer_state(torch::optim::Optimizer& optimizer, dist::Communicator* communicator,
                                             std::int64_t message_bytes) {
  if (!communicator || communicator->size() < 2)
    return {nullptr, "distributed.shard_optimizer: true changes nothing on one rank, which keeps the whole optimizer state"};
  if (!keeps_state(optimizer))
    return {nullptr, "distributed.shard_optimizer: true changes nothing here: SGD without momentum keeps no optimizer state"};
  auto shards = std::make_unique<OptimizerShards>(optimizer, *communicator, message_bytes);
  const double share =
      shards->elements() > 0 ? 100.0 * static_cast<double>(shards->own_elements()) / static_cast<double>(shards->elements()) : 0.0;
  auto line = "optimizer state sharded over " + core::counted(communicator->size(), "rank") + " (ZeRO stage 1): this rank steps " +
              std::to_string(shards->own_count()) + " of " + core::counted(shards->count(), "parameter tensor") + " (" +
              core::format_fixed(share, 1) + " % of the elements) and broadcasts them after each step";
  return {std::move(shards), std::move(line)};
}

}  // namespace gputrain::train

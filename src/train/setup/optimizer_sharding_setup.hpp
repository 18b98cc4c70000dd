#pragma once
// distributed.shard_optimizer at set-up: splits the optimizer's parameters among the ranks
// (train/step/optimizer_shards.hpp) and says how, or says why it changes nothing.

#include <cstdint>
#include <memory>
#include <string>

namespace torch::optim {
class Optimizer;
}

namespace gputrain::dist {
class Communicator;
}

namespace gputrain::train {

class OptimizerShards;

struct OptimizerShardingSetup {
  std::unique_ptr<OptimizerShards> shards;  ///< nullptr: nothing to shard (one rank, an optimizer without state)
  std::string line;                         ///< what to say about it; a note when nothing is sharded
};

/// `communicator`: nullptr for a plain run. `message_bytes`: the parameter broadcasts' size (the
/// gradient buckets').
OptimizerShardingSetup shard_optimizer_state(torch::optim::Optimizer& optimizer, dist::Communicator* communicator,
                                             std::int64_t message_bytes);

}  // namespace gputrain::train

#pragma once
// model.sync_batch_norm at set-up: checks that the model's batch norm can synchronise (on one
// rank too, so a config tried on one GPU fails there, not on the cluster) and, with several ranks,
// attaches the ranks' exchange of statistics to its layers.

#include <memory>
#include <string>

namespace gputrain::dist {
class Communicator;
}

namespace gputrain::train {

class Model;
class BatchNormSync;

struct BatchNormSyncSetup {
  std::shared_ptr<BatchNormSync> sync;  ///< nullptr: nothing synchronises (one rank, no batch norm)
  std::string line;                     ///< what to say about it
};

/// Throws UsageError for a model whose batch norm cannot synchronise: a TorchScript module, or a
/// C++ model with torch::nn::BatchNorm layers (not gputrain's syncable ones). `communicator`:
/// nullptr for a plain run.
BatchNormSyncSetup synchronise_batch_norm(Model& model, dist::Communicator* communicator);

}  // namespace gputrain::train

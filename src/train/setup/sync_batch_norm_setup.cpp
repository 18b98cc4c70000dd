#include "sync_batch_norm_setup.hpp"

#include <torch/nn/module.h>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/train/model.hpp"
#include "train/models/layers/sync_batch_norm.hpp"

namespace gputrain::train {

BatchNormSyncSetup synchronise_batch_norm(Model& model, dist::Communicator* communicator) {
  auto* module = model.module();
  if (!module)
    throw UsageError(
        "model.sync_batch_norm: true, but the model is a TorchScript module (model.torchscript), whose batch-norm "
        "layers gputrain cannot replace with synchronised ones",
        "set model.sync_batch_norm: false (each rank then normalises over its own samples), or train a built-in model "
        "(model.name: resnet18, ...)");
  const auto census = count_batch_norms(*module);
  if (!census.plain.empty())
    throw UsageError("model.sync_batch_norm: true, but " + model.name() + "'s layer" + (census.plain.size() > 1 ? "s " : " ") +
                         core::join_some(census.plain, 5) + (census.plain.size() > 1 ? " are" : " is") +
                         " torch::nn::BatchNorm, which normalises over one rank's samples only",
                     "build them as gputrain::train::SyncableBatchNorm1d/2d (#include \"gputrain/train/sync_batch_norm.hpp\"), which "
                     "are torch::nn's BatchNorm until a run synchronises them, or set model.sync_batch_norm: false");
  const auto layers = core::counted(census.syncable, "batch-norm layer");
  if (census.syncable == 0)
    return {nullptr, "model.sync_batch_norm: true, but " + model.name() + " has no batch norm: nothing to synchronise"};
  if (!communicator || communicator->size() < 2)
    return {nullptr, "model.sync_batch_norm: true changes nothing on one rank, whose batch is the whole batch (" + layers + ")"};
  auto sync = std::make_shared<BatchNormSync>(*communicator);
  attach_batch_norm_sync(*module, sync);
  return {sync, "sync batch norm: " + layers + ", each over all " + std::to_string(communicator->size()) + " ranks' samples"};
}

}  // namespace gputrain::train

#pragma once
// A training pass of one sample through batch norm fails in LibTorch ("Expected more than 1 value
// per channel when training") where the layer's feature maps are down to one value: an MLP's
// BatchNorm1d always, a ResNet's last layers on small images. The division of the samples into
// batches can leave an epoch's last pass with one sample, which would end the run there, after a
// whole epoch; such a run leaves that sample out of each epoch instead, and says so.

#include <cstdint>
#include <string>

namespace gputrain::train {

struct Config;
struct RunData;

/// How a run's samples divide: `samples` over `ranks` (each rank every ranks-th, as
/// data::EpochSampler shards them), in steps of `effective_batch`, each in passes of `micro_batch`.
struct EpochDivision {
  std::int64_t samples = 0, ranks = 1, effective_batch = 1, micro_batch = 1;
};

struct LoneSamplePlan {
  bool leave_out = false;            ///< a rank whose epoch would end on a pass of one sample leaves it out
  std::int64_t steps_per_epoch = 0;  ///< the largest rank's steps then (0: when none is left out)
  std::string note;                  ///< what the run says about it
};

/// The plan for a training run without data.drop_last: nothing to do unless some rank's epoch
/// ends on a pass of one sample and the model fails on one (fails_on_one_sample). Throws
/// UsageError when every pass holds one sample (train.batch_size 1) or no sample would be left.
/// Not for batch norm synchronised over several ranks, whose passes hold every rank's samples.
LoneSamplePlan plan_lone_samples(const Config& config, const RunData& data, const EpochDivision& division);

/// Whether the model's training forward fails on a pass of one sample, found by a forward of one
/// zero sample through a fresh copy of the model on the CPU, so that the run's model, its
/// statistics and its device are untouched. It draws random numbers: call it before the model's
/// seeding.
bool fails_on_one_sample(const Config& config, const RunData& data);

/// 1 when `samples` taken in steps of `effective_batch`, each in passes of `micro_batch`, end on a
/// pass of one sample, else 0.
std::int64_t lone_last_pass(std::int64_t samples, std::int64_t effective_batch, std::int64_t micro_batch);

}  // namespace gputrain::train

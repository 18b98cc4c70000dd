#include "lone_sample.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/run_setup.hpp"
#include "train/step/step_failures.hpp"
#include "train/step/training_step.hpp"

namespace gputrain::train {

bool fails_on_one_sample(const Config& config, const RunData& data) {
  const auto& layout = data.sources.train->layout();
  std::vector<std::int64_t> shape{1};
  shape.insert(shape.end(), layout.input_shape.begin(), layout.input_shape.end());
  try {
    auto model = build_model(ModelSpec{config.model, config.data.shape, model_outputs(config)});
    model->set_training(true);
    at::NoGradGuard no_grad;
    const auto input = model_input(data.transform, /*channels_last=*/false, at::zeros(shape, at::TensorOptions().dtype(layout.input_dtype)),
                                   /*training=*/false);
    model->forward(input);
  } catch (const std::exception& e) {
    // Anything else a forward may raise is the training step's to report, in its own words.
    return batch_norm_refused_one_sample(e.what());
  }
  return false;
}

std::int64_t lone_last_pass(std::int64_t samples, std::int64_t effective_batch, std::int64_t micro_batch) {
  if (samples <= 0 || effective_batch <= 0 || micro_batch <= 0) return 0;
  const std::int64_t last_step = samples % effective_batch;
  return last_step % micro_batch == 1 ? 1 : 0;
}

namespace {

// Rank r's samples, as the run's sampler shards them (the first samples % ranks take one more).
std::int64_t shard_of(const EpochDivision& d, std::int64_t rank) {
  return data::EpochSampler(d.samples, /*shuffle=*/false, /*seed=*/0, rank, d.ranks).size();
}

std::int64_t lone_in(const EpochDivision& d, std::int64_t shard) { return lone_last_pass(shard, d.effective_batch, d.micro_batch); }

// The samples each epoch leaves out, over all ranks: one per rank whose shard ends on a lone pass.
std::int64_t left_out(const EpochDivision& d) {
  const auto larger = shard_of(d, 0), smaller = shard_of(d, d.ranks - 1);
  const auto with_larger = larger == smaller ? d.ranks : d.samples % d.ranks;
  return with_larger * lone_in(d, larger) + (d.ranks - with_larger) * lone_in(d, smaller);
}

// The largest rank's steps of an epoch once the lone samples are out.
std::int64_t steps_without_lone(const EpochDivision& d) {
  std::int64_t most = 0;
  for (const auto shard : {shard_of(d, 0), shard_of(d, d.ranks - 1)})
    most = std::max(most, (shard - lone_in(d, shard) + d.effective_batch - 1) / d.effective_batch);
  return most;
}

// The train.batch_size nearest the run's whose passes never end on one sample; 0 when none is near.
std::int64_t nearest_whole_batch(const EpochDivision& d) {
  const std::int64_t accumulation = d.effective_batch / d.micro_batch;
  for (std::int64_t distance = 1; distance <= 16; ++distance)
    for (const auto batch : {d.micro_batch + distance, d.micro_batch - distance}) {
      if (batch < 2) continue;
      if (left_out(EpochDivision{d.samples, d.ranks, batch * accumulation, batch}) == 0) return batch;
    }
  return 0;
}

std::string division_text(const EpochDivision& d) {
  return core::counted(d.samples, "training sample") + (d.ranks > 1 ? " over " + std::to_string(d.ranks) + " ranks" : "") +
         " in steps of " + std::to_string(d.effective_batch) +
         (d.effective_batch != d.micro_batch ? " (passes of " + std::to_string(d.micro_batch) + ")" : "");
}

}  // namespace

LoneSamplePlan plan_lone_samples(const Config& config, const RunData& data, const EpochDivision& d) {
  LoneSamplePlan plan;
  const bool every_pass = d.micro_batch == 1;
  const auto lone = left_out(d);
  if ((!every_pass && lone == 0) || !fails_on_one_sample(config, data)) return plan;
  const std::string model = config.model.torchscript.empty() ? config.model.name : "model.torchscript";
  const std::string cannot = model + "'s batch norm cannot normalise";
  const std::string libtorch = " (LibTorch: \"Expected more than 1 value per channel when training\")";
  const std::string why = cannot + " one sample alone" + libtorch;
  const std::string other_model =
      config.model.name == "mlp" ? "model.norm: layer, which normalises each sample alone" : "a model without batch norm";
  if (every_pass) {
    const std::string keep = d.effective_batch > 1 ? " (a smaller train.grad_accum keeps the effective batch)" : "";
    throw UsageError((config.train.batch_size ? "train.batch_size 1" : "batch_size auto's choice of 1") +
                         std::string(" puts one sample in each pass, and ") + why,
                     (config.train.batch_size ? "set train.batch_size: 2 or more" + keep
                                              : "raise train.max_batch_size or allow more memory (device.max_memory)") +
                         ", or use " + other_model);
  }
  plan.steps_per_epoch = steps_without_lone(d);
  if (plan.steps_per_epoch == 0)
    throw UsageError("the run has " + core::counted(d.samples, "training sample") +
                         (d.ranks > 1 ? " over " + std::to_string(d.ranks) + " ranks, one at most each" : "") + ", and " + why,
                     std::string("add training samples") + (config.data.val_fraction > 0 ? " (a lower data.val_fraction keeps more)" : "") +
                         ", or use " + other_model);
  plan.leave_out = true;
  const auto batch = nearest_whole_batch(d);
  plan.note = "note: each epoch would end on a pass of one sample (" + division_text(d) + "), which " + cannot + libtorch + ": " +
              (lone == 1 ? "that sample is" : std::to_string(lone) + " such samples, one per rank, are") + " left out of each epoch" +
              (config.data.shuffle ? " (another each epoch, as data.shuffle is on)" : "") +
              "; data.drop_last: true leaves out the whole last batch" +
              (batch > 0 ? ", train.batch_size " + std::to_string(batch) + " keeps every sample" : "");
  return plan;
}

}  // namespace gputrain::train

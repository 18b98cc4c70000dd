// The validation pass after each epoch: loss, accuracy and balanced accuracy (or MSE/MAE), summed
// over ranks; an out-of-memory error shrinks the validation batch only.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

#include "gputrain/core/units.hpp"
#include "train/models/layers/weight_casts.hpp"
#include "trainer_state.hpp"

namespace gputrain::train {
namespace {

// What a validation pass adds up on the device: the loss (times the rows), right predictions,
// squared and absolute errors, and per class its samples, those predicted right (the balanced
// accuracy's parts) and how often it was predicted (its precision's).
struct ValidationSums {
  ValidationSums(std::int64_t classes, const at::TensorOptions& f64)
      : loss(at::zeros({}, f64)),
        correct(at::zeros({}, f64)),
        se(at::zeros({}, f64)),
        ae(at::zeros({}, f64)),
        class_samples(at::zeros({classes}, f64)),
        class_right(at::zeros({classes}, f64)),
        class_predicted(at::zeros({classes}, f64)) {}

  void add(const ValidationSums& o, bool classification) {
    loss += o.loss;
    correct += o.correct;
    se += o.se;
    ae += o.ae;
    if (classification) {
      class_samples += o.class_samples;
      class_right += o.class_right;
      class_predicted += o.class_predicted;
    }
  }

  at::Tensor loss, correct, se, ae, class_samples, class_right, class_predicted;
};

// One chunk of validation samples through the model, `micro` at a time.
struct ValidationStep {
  Model& model;
  const data::BatchTransform& transform;
  bool classification, channels_last;
  c10::Device device;
  Precision precision;

  ValidationSums sums_of(const data::Batch& chunk, std::int64_t micro, std::int64_t classes, const at::TensorOptions& f64) const {
    ValidationSums sums(classes, f64);
    const std::int64_t rows = chunk.size();
    for (std::int64_t start = 0; start < rows; start += micro) {
      const std::int64_t end = std::min(rows, start + micro);
      const auto inputs = model_input(transform, channels_last, chunk.inputs.slice(0, start, end), /*training=*/false);
      const auto targets = chunk.targets.slice(0, start, end);  // in their own units
      at::Tensor output;
      {
        AutocastScope autocast(device.type(), precision);
        output = model.forward(inputs);
      }
      output = output.to(at::kFloat);
      // The loss as training sees it (standardised targets with data.standardize_targets),
      // without label smoothing or class weights; MSE and MAE in the targets' own units.
      sums.loss += loss_of(classification, output, transform.targets(targets)).to(at::kDouble) * static_cast<double>(end - start);
      if (classification) {
        const auto predicted = output.argmax(1);
        const auto right = predicted.eq(targets).to(at::kDouble), ones = at::ones_like(right);
        sums.correct += right.sum();
        // index_add_ rather than bincount: no wait for the device to size the result.
        sums.class_samples.index_add_(0, targets, ones);
        sums.class_right.index_add_(0, targets, right);
        // A model may give more logits than the data has classes (a pretrained head): a pick past
        // them is a wrong prediction of no class.
        sums.class_predicted.index_add_(0, predicted.clamp_max(classes - 1), ones * predicted.lt(classes).to(at::kDouble));
      } else {
        const auto diff = (transform.predictions(output) - targets).to(at::kDouble);
        sums.se += diff.pow(2).sum();
        sums.ae += diff.abs().sum();
      }
    }
    return sums;
  }
};

// The epoch's figures from the sums over all ranks: [loss, correct, se, ae, count, per class...].
void fill_figures(EpochMetrics& m, const std::vector<double>& sums, bool classification, std::int64_t classes, std::int64_t outputs) {
  constexpr std::size_t kPerClass = 5;  // where the per-class figures start: samples, right, predicted
  const double count = sums[4];
  m.val_samples = std::llround(count);
  if (count == 0) return;
  m.val_loss = sums[0] / count;
  if (!classification) {
    const double values = count * static_cast<double>(outputs);
    m.val_mse = sums[2] / values;
    m.val_mae = sums[3] / values;
    return;
  }
  m.val_accuracy = sums[1] / count;
  // scikit-learn's balanced_accuracy_score: the mean recall over the classes that have samples.
  double recall_sum = 0;
  std::int64_t present = 0;
  const auto per_class_sum = [&](std::int64_t part, std::int64_t c) {
    return std::llround(sums[kPerClass + static_cast<std::size_t>(part * classes + c)]);
  };
  for (std::int64_t c = 0; c < classes; ++c) {
    const auto samples = per_class_sum(0, c), right = per_class_sum(1, c);
    m.val_class_samples.push_back(samples);
    m.val_class_right.push_back(right);
    m.val_class_predicted.push_back(per_class_sum(2, c));
    if (samples == 0) continue;
    recall_sum += static_cast<double>(right) / static_cast<double>(samples);
    ++present;
  }
  m.val_balanced_accuracy = recall_sum / static_cast<double>(present);
}

}  // namespace

EpochMetrics Trainer::State::validate(std::int64_t epoch, std::optional<double> train_loss, double seconds) {
  RECORD_USER_SCOPE("gputrain::validation");
  EpochMetrics m;
  m.epoch = epoch;
  m.step = progress.step;
  m.train_loss = train_loss;
  m.seconds = seconds;
  if (!placement.val_feed) return m;
  reporter.working_on("validation after epoch " + std::to_string(epoch + 1));
  // Gradients keep the ranks' parameters identical, but batch-norm running statistics are updated
  // from each rank's own samples. Every rank validates with rank 0's, as PyTorch DDP's
  // broadcast_buffers does at each forward: so the figures describe the model rank 0 saves (best.pt,
  // the weights). Rank 0's statistics are left as they are, so its training follows the same path.
  if (auto* comm = ranks.communicator(); comm && !buffers.empty()) dist::broadcast_from_rank0(*comm, {}, buffers);
  model->set_training(false);
  at::NoGradGuard no_grad;
  const auto f64 = at::TensorOptions().device(device).dtype(at::kDouble);
  const std::int64_t classes = classification ? model_outputs(config) : 0;
  const ValidationStep step{*model, data.transform, classification, channels_last, device, config.train.precision};
  std::vector<double> figures;
  // Beside a captured step, in its memory (StepEngine::between_steps): every figure is on the
  // host before the next replay can overwrite what the sums were kept in.
  const auto sum_up = [&] {
    ValidationSums total(classes, f64);
    std::int64_t n = 0;
    // The weights do not change in validation: cast once for the pass (weight_casts.hpp).
    const auto dtype = compute_dtype(config.train.precision);
    auto casts = batched_weight_casts(*model, dtype);
    const auto cast_weights = casts ? casts->cast(dtype) : BatchedWeightCasts::Scope();
    // Each rank validates every world-th sample; the sums are added up over ranks below.
    placement.val_feed->start(at::arange(ranks.rank(), val_size, ranks.world_size(), at::kLong), val_guard->preferred_micro_batch());
    while (auto fed = placement.val_feed->next()) {
      const data::Batch& chunk = fed->batch;
      n += chunk.size();
      std::optional<ValidationSums> chunk_sums;
      // An OOM here shrinks the validation batch only; the chunk is summed again from scratch.
      val_guard->run(
          progress.step, chunk.size(), [&](std::int64_t micro) { chunk_sums = step.sums_of(chunk, micro, classes, f64); }, [] {});
      reporter.oom_events(*val_guard);
      total.add(*chunk_sums, classification);
    }
    figures = {total.loss.item<double>(), total.correct.item<double>(), total.se.item<double>(), total.ae.item<double>(),
               static_cast<double>(n)};
    const auto per_class = at::cat({total.class_samples, total.class_right, total.class_predicted}).cpu();
    figures.insert(figures.end(), per_class.data_ptr<double>(), per_class.data_ptr<double>() + per_class.numel());
  };
  if (engine)
    engine->between_steps(sum_up);
  else
    sum_up();
  model->set_training(true);
  fill_figures(m, ranks.sum(figures, "the sum of the validation figures after epoch " + std::to_string(epoch + 1)), classification, classes,
               model_outputs(config));
  if (val_size > 0 && m.val_samples == 0) {  // moved, deleted or unmounted during the run
    report_skipped();
    reporter.note("warning: validation after epoch " + std::to_string(epoch + 1) + " read none of its " +
                  core::counted(val_size, "sample") +
                  ": each was unreadable (named above), so the epoch has no validation figures; put the data back for the next "
                  "epochs to have them");
  }
  return m;
}

}  // namespace gputrain::train

// The validation pass after each epoch: loss, accuracy and balanced accuracy (or MSE/MAE), summed
// over ranks; an out-of-memory error shrinks the validation batch only.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>

#include "trainer_state.hpp"

namespace gputrain::train {

EpochMetrics Trainer::State::validate(std::int64_t epoch, double train_loss, double seconds) {
  EpochMetrics m;
  m.epoch = epoch;
  m.step = progress.step;
  m.train_loss = train_loss;
  m.seconds = seconds;
  if (!placement.val_feed) return m;
  working_on("validation after epoch " + std::to_string(epoch + 1));
  // Gradients keep the ranks' parameters identical, but batch-norm running statistics are updated
  // from each rank's own samples. Every rank validates with rank 0's, as PyTorch DDP's
  // broadcast_buffers does at each forward: so the figures describe the model rank 0 saves (best.pt,
  // the weights). Rank 0's statistics are left as they are, so its training follows the same path.
  if (auto* comm = ranks.communicator(); comm && !buffers.empty()) dist::broadcast_from_rank0(*comm, {}, buffers);
  model->set_training(false);
  at::NoGradGuard no_grad;
  const auto f64 = at::TensorOptions().device(device).dtype(at::kDouble);
  at::Tensor loss_sum = at::zeros({}, f64), correct = at::zeros({}, f64), se = at::zeros({}, f64), ae = at::zeros({}, f64);
  // Per class: its validation samples, those predicted right (the balanced accuracy's parts), and
  // how often it was predicted (for its precision).
  const std::int64_t classes = classification ? model_outputs(config) : 0;
  at::Tensor class_samples = at::zeros({classes}, f64), class_right = at::zeros({classes}, f64), class_predicted = at::zeros({classes}, f64);
  std::int64_t n = 0;
  // Each rank validates every world-th sample; the sums are added up over ranks below.
  placement.val_feed->start(at::arange(ranks.rank(), val_size, ranks.world_size(), at::kLong), val_guard->preferred_micro_batch());
  while (auto fed = placement.val_feed->next()) {
    const data::Batch& chunk = fed->batch;
    const std::int64_t rows = chunk.size();
    n += rows;
    at::Tensor chunk_loss, chunk_correct, chunk_se, chunk_ae, chunk_class_samples, chunk_class_right, chunk_class_predicted;
    // An OOM here shrinks the validation batch only; the chunk is summed again from scratch.
    val_guard->run(
        progress.step, rows,
        [&](std::int64_t micro) {
          chunk_loss = at::zeros({}, f64), chunk_correct = at::zeros({}, f64), chunk_se = at::zeros({}, f64),
          chunk_ae = at::zeros({}, f64), chunk_class_samples = at::zeros({classes}, f64), chunk_class_right = at::zeros({classes}, f64),
          chunk_class_predicted = at::zeros({classes}, f64);
          for (std::int64_t start = 0; start < rows; start += micro) {
            const std::int64_t end = std::min(rows, start + micro);
            const auto inputs = model_input(data.transform, channels_last, chunk.inputs.slice(0, start, end), /*training=*/false);
            const auto targets = chunk.targets.slice(0, start, end);  // in their own units
            at::Tensor output;
            {
              AutocastScope autocast(device.type(), config.train.precision);
              output = model->forward(inputs);
            }
            output = output.to(at::kFloat);
            // The loss as training sees it (standardised targets with data.standardize_targets),
            // without label smoothing or class weights; MSE and MAE in the targets' own units.
            chunk_loss += loss_of(classification, output, data.transform.targets(targets)).to(at::kDouble) * static_cast<double>(end - start);
            if (classification) {
              const auto predicted = output.argmax(1);
              const auto right = predicted.eq(targets).to(at::kDouble), ones = at::ones_like(right);
              chunk_correct += right.sum();
              // index_add_ rather than bincount: no wait for the device to size the result.
              chunk_class_samples.index_add_(0, targets, ones);
              chunk_class_right.index_add_(0, targets, right);
              chunk_class_predicted.index_add_(0, predicted, ones);
            } else {
              const auto diff = (data.transform.predictions(output) - targets).to(at::kDouble);
              chunk_se += diff.pow(2).sum();
              chunk_ae += diff.abs().sum();
            }
          }
        },
        [] {});
    report_oom_events(*val_guard);
    loss_sum += chunk_loss;
    correct += chunk_correct;
    se += chunk_se;
    ae += chunk_ae;
    if (classification) {
      class_samples += chunk_class_samples;
      class_right += chunk_class_right;
      class_predicted += chunk_class_predicted;
    }
  }
  model->set_training(true);
  std::vector<double> figures{loss_sum.item<double>(), correct.item<double>(), se.item<double>(), ae.item<double>(), static_cast<double>(n)};
  constexpr std::size_t kPerClass = 5;  // where the per-class figures start: samples, right, predicted
  const auto per_class = at::cat({class_samples, class_right, class_predicted}).cpu();
  figures.insert(figures.end(), per_class.data_ptr<double>(), per_class.data_ptr<double>() + per_class.numel());
  const auto sums = ranks.sum(figures, "the sum of the validation figures after epoch " + std::to_string(epoch + 1));
  const double count = sums[4];
  m.val_samples = std::llround(count);
  if (count == 0) return m;
  m.val_loss = sums[0] / count;
  if (classification) {
    m.val_accuracy = sums[1] / count;
    // scikit-learn's balanced_accuracy_score: the mean recall over the classes that have samples.
    double recall_sum = 0;
    std::int64_t present = 0;
    const auto per_class_sum = [&](std::int64_t part, std::int64_t c) { return std::llround(sums[kPerClass + static_cast<std::size_t>(part * classes + c)]); };
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
  } else {
    const double values = count * static_cast<double>(model_outputs(config));
    m.val_mse = sums[2] / values;
    m.val_mae = sums[3] / values;
  }
  return m;
}

}  // namespace gputrain::train

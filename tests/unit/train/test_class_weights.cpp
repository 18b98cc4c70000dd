// train.class_weights and the balanced accuracy: the weights made from the labels, the loss they
// weigh, the line that reports them, and whole runs that use them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/metrics.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/jsonl_records.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/usage_errors.hpp"
#include "train/data_checks/class_weights.hpp"
#include "train/step/training_step.hpp"

using namespace gputrain;
using namespace gputrain::train;
using test_support::small_run;
using test_support::usage_error_and_fix;

namespace {

std::shared_ptr<const data::Dataset> labelled(const at::Tensor& labels) {
  return data::make_array_dataset({at::zeros({labels.size(0), 2}), labels}, "labels.npy (" + std::to_string(labels.size(0)) + " samples)",
                                  "labels.npy");
}

// `counts[c]` samples of class c, in class order.
at::Tensor labels_with(const std::vector<std::int64_t>& counts) {
  std::vector<at::Tensor> parts;
  for (std::size_t c = 0; c < counts.size(); ++c) parts.push_back(at::full({counts[c]}, static_cast<std::int64_t>(c), at::kLong));
  return at::cat(parts);
}

ClassWeights balanced() { return {true, {}}; }
ClassWeights given(std::vector<double> weights) { return {false, std::move(weights)}; }

std::vector<double> values(const at::Tensor& t) {
  const auto d = t.to(at::kDouble).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

}  // namespace

TEST(ClassWeights, BalancedWeighsEachClassByTheInverseOfItsCountAndKeepsTheMeanAtOne) {
  const auto labels = labels_with({90, 10});
  const auto weights = resolve_class_weights(balanced(), *labelled(labels), 2);
  ASSERT_TRUE(weights.defined());
  EXPECT_EQ(weights.scalar_type(), at::kFloat);
  const auto w = values(weights);
  EXPECT_NEAR(w[0], 100.0 / (2 * 90), 1e-6);  // scikit-learn's samples / (classes * count)
  EXPECT_NEAR(w[1], 100.0 / (2 * 10), 1e-6);
  EXPECT_NEAR(weights.index_select(0, labels).mean().item<double>(), 1.0, 1e-6) << "a sample weighs 1 on average";

  // data.classes above the labels' classes: the absent class weighs 1 and the present ones share
  // the mean of 1 between them.
  const auto with_absent = values(resolve_class_weights(balanced(), *labelled(labels_with({30, 0, 10})), 3));
  EXPECT_NEAR(with_absent[0], 40.0 / (2 * 30), 1e-6);
  EXPECT_EQ(with_absent[1], 1.0);
  EXPECT_NEAR(with_absent[2], 40.0 / (2 * 10), 1e-6);
}

TEST(ClassWeights, AListIsTakenAsGivenAndNoneIsNothing) {
  EXPECT_FALSE(resolve_class_weights({}, *labelled(labels_with({5, 5})), 2).defined());
  EXPECT_EQ(values(resolve_class_weights(given({1, 0, 4.5}), *labelled(labels_with({5, 5, 5})), 3)), (std::vector<double>{1, 0, 4.5}));
}

TEST(ClassWeights, WeightsThatCannotWorkAreRefusedWithTheFix) {
  EXPECT_EQ(usage_error_and_fix([] {
              resolve_class_weights(given({1, 2}), *labelled(labels_with({5, 5, 5})), 3);
            }),
            "train.class_weights lists 2 weights but the labels of labels.npy (15 samples) give 3 classes\n"
            "give one weight per class (class 0 first), or train.class_weights: balanced to weigh them by their counts");
  EXPECT_EQ(usage_error_and_fix([] {
              resolve_class_weights(given({0, 0, 3}), *labelled(labels_with({5, 5, 0})), 3);
            }),
            "train.class_weights give every training sample's class the weight 0: nothing would train\n"
            "give the classes in the training labels a weight above 0");
}

TEST(ClassWeights, TheNoteNamesEachClassOrTheRangeAndWhatBestPtShouldBeKeptBy) {
  const auto two = resolve_class_weights(balanced(), *labelled(labels_with({90, 10})), 2);
  EXPECT_EQ(class_weights_note(two, balanced(), {"stay", "churn"}, "val_balanced_accuracy", true),
            "class weights (train.class_weights: balanced, from the training labels' counts): 'stay' 0.556, 'churn' 5");
  EXPECT_EQ(class_weights_note(two, balanced(), {}, "val_loss", true),
            "class weights (train.class_weights: balanced, from the training labels' counts): class 0 0.556, class 1 5; they weigh the "
            "training loss only: val loss is the plain cross-entropy, and checkpoint.best_metric: val_balanced_accuracy keeps best.pt by "
            "what the weights aim at");
  std::vector<std::int64_t> counts(12, 10);
  counts[3] = 40;
  counts[7] = 2;
  const auto twelve = resolve_class_weights(balanced(), *labelled(labels_with(counts)), 12);
  EXPECT_EQ(class_weights_note(twelve, balanced(), {}, "val_accuracy", true),
            "class weights (train.class_weights: balanced, from the training labels' counts): from 0.296 (class 3) to 5.92 (class 7) over "
            "12 classes");
  EXPECT_EQ(class_weights_note(at::Tensor(), {}, {}, "val_loss", true), "");
  // Without validation data there is no best.pt to keep by a metric.
  EXPECT_EQ(class_weights_note(two, balanced(), {}, "val_loss", false),
            "class weights (train.class_weights: balanced, from the training labels' counts): class 0 0.556, class 1 5");
}

// Each sample's cross-entropy times its class's weight, averaged over all the samples.
TEST(ClassWeights, TheLossIsTheMeanOfEachSamplesWeightedLoss) {
  at::manual_seed(5);
  const auto output = at::randn({12, 3});
  const auto target = at::tensor({0, 1, 2, 0, 0, 1, 2, 2, 0, 1, 0, 0}, at::kLong);
  const auto plain = loss_of(true, output, target);
  EXPECT_NEAR(loss_of(true, output, target, 0.0, at::full({3}, 2.0f)).item<double>(), 2 * plain.item<double>(), 1e-6);
  // Only class 0 counts: its samples' losses summed, over all 12 samples (not over class 0's 6).
  const auto each = at::cross_entropy_loss(output, target, {}, at::Reduction::None);
  const double class0 = each.masked_select(target.eq(0)).sum().item<double>() / 12;
  EXPECT_NEAR(loss_of(true, output, target, 0.0, at::tensor({1.0f, 0.0f, 0.0f})).item<double>(), class0, 1e-6);
  // With label smoothing, the smoothed per-sample loss is the one weighed.
  const auto smoothed = at::cross_entropy_loss(output, target, {}, at::Reduction::None, -100, 0.2);
  const auto w = at::tensor({1.0f, 3.0f, 0.5f});
  EXPECT_NEAR(loss_of(true, output, target, 0.2, w).item<double>(), (smoothed * w.index_select(0, target)).mean().item<double>(), 1e-6);
}

// AdamW's steps do not depend on the loss's scale, so weights of 2 for every class double the
// training loss and leave the model, and so its val loss, as they were: the weights reach the
// training loss and nothing else.
TEST(ClassWeights, TheyWeighTheTrainingLossButNotTheValidationLoss) {
  auto plain_run = test_support::fit_capturing_console(small_run("cw-plain"));
  auto doubled_run = test_support::fit_capturing_console(small_run("cw-doubled", {"train.class_weights=[2, 2, 2]"}));
  const auto& plain = plain_run.result;
  const auto& doubled = doubled_run.result;
  ASSERT_TRUE(plain.first_loss && doubled.first_loss && plain.last_epoch && doubled.last_epoch);
  EXPECT_NEAR(*doubled.first_loss, 2 * *plain.first_loss, 1e-5);
  EXPECT_NEAR(*doubled.last_epoch->val_loss, *plain.last_epoch->val_loss, 1e-3);
  EXPECT_NE(doubled_run.console.find(
                "class weights (train.class_weights: as given): class 0 2, class 1 2, class 2 2; they weigh the training loss only"),
            std::string::npos)
      << doubled_run.console;
}

// scikit-learn's balanced_accuracy_score: each class's recall, averaged over the classes present.
// metrics.jsonl always has it for classification; the epoch lines give it beside the accuracy
// when the run weighs its classes (or they are unbalanced, or best.pt is kept by it).
TEST(ClassWeights, TheBalancedAccuracyIsRecordedAndShownWhereItMatters) {
  const auto plain = test_support::fit_capturing_console(small_run("ba-plain"));
  ASSERT_TRUE(plain.result.last_epoch && plain.result.last_epoch->val_balanced_accuracy);
  const double balanced_accuracy = *plain.result.last_epoch->val_balanced_accuracy;
  EXPECT_GT(balanced_accuracy, 0.0);
  EXPECT_LE(balanced_accuracy, 1.0);
  EXPECT_FALSE(plain.result.show_balanced_accuracy);
  EXPECT_EQ(plain.console.find("(balanced "), std::string::npos) << plain.console;
  const auto epochs = test_support::jsonl_records(plain.result.run_dir + "/metrics.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 2U);
  const auto& last = epochs.back();
  EXPECT_EQ(last["val_balanced_accuracy"].get<double>(), balanced_accuracy);
  // The per-class counts give both accuracies again.
  const auto samples = last["val_class_samples"].get<std::vector<std::int64_t>>();
  const auto right = last["val_class_right"].get<std::vector<std::int64_t>>();
  const auto predicted = last["val_class_predicted"].get<std::vector<std::int64_t>>();
  ASSERT_EQ(samples.size(), 3U);
  ASSERT_EQ(right.size(), 3U);
  ASSERT_EQ(predicted.size(), 3U);
  std::int64_t all = 0, all_right = 0, all_predicted = 0;
  double recalls = 0;
  int present = 0;
  for (std::size_t c = 0; c < 3; ++c) {
    all += samples[c];
    all_right += right[c];
    all_predicted += predicted[c];
    EXPECT_LE(right[c], predicted[c]);
    if (samples[c] == 0) continue;
    recalls += static_cast<double>(right[c]) / static_cast<double>(samples[c]);
    ++present;
  }
  EXPECT_EQ(all, 32);            // small_run's validation samples
  EXPECT_EQ(all_predicted, 32);  // one prediction each
  EXPECT_NEAR(static_cast<double>(all_right) / 32, last["val_accuracy"].get<double>(), 1e-12);
  EXPECT_NEAR(recalls / present, balanced_accuracy, 1e-12);
  EXPECT_EQ(plain.console.find("val per class"), std::string::npos) << plain.console;

  const auto kept_by_it = test_support::fit_capturing_console(small_run("ba-best", {"checkpoint.best_metric=val_balanced_accuracy"}));
  EXPECT_TRUE(kept_by_it.result.show_balanced_accuracy);
  EXPECT_NE(kept_by_it.console.find("% (balanced "), std::string::npos) << kept_by_it.console;
  // The first epoch is the best so far, said as a percentage like the epoch line beside it.
  const auto first = test_support::jsonl_records(kept_by_it.result.run_dir + "/metrics.jsonl", "epoch").front();
  EXPECT_NE(kept_by_it.console.find("best val_balanced_accuracy so far: " +
                                    metric_text("val_balanced_accuracy", first["val_balanced_accuracy"].get<double>()) + " -> "),
            std::string::npos)
      << kept_by_it.console;
  EXPECT_NE(kept_by_it.console.find("val per class after epoch 2: class 0 "), std::string::npos) << kept_by_it.console;
}

// unread_settings: a key set away from its default that the chosen optimizer, scheduler or model
// does not read is named, with who would read it; a shipped config names none.

#include <gtest/gtest.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>

#include <filesystem>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model_registry.hpp"
#include "support/test_paths.hpp"
#include "train/config/unread_settings.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

std::vector<std::string> unread_with(std::vector<std::string> sets) { return unread_settings(load_config({{}, std::move(sets), ""})); }

}  // namespace

TEST(UnreadSettings, DefaultsAndEveryShippedConfigNameNone) {
  const Config defaults;
  EXPECT_TRUE(unread_settings(defaults).empty());
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(gputrain::test_support::source_dir()) + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++configs;
    EXPECT_EQ(unread_settings(load_config({{entry.path().string()}, {}, ""})), std::vector<std::string>{}) << entry.path();
  }
  EXPECT_GE(configs, 5);
}

TEST(UnreadSettings, NamesOptimizerKeysTheChosenOptimizerIgnores) {
  EXPECT_EQ(unread_with({"optimizer.name=adam", "optimizer.momentum=0.5", "optimizer.nesterov=true"}),
            (std::vector<std::string>{"optimizer.momentum is 0.5, but adam does not read it (only sgd does)",
                                      "optimizer.nesterov is true, but adam does not read it (only sgd does)"}));
  EXPECT_EQ(unread_with({"optimizer.name=sgd", "optimizer.betas=[0.8, 0.99]"}),
            std::vector<std::string>{"optimizer.betas is [0.8, 0.99], but sgd does not read it (adam and adamw do)"});
  EXPECT_TRUE(unread_with({"optimizer.name=sgd", "optimizer.momentum=0.5", "optimizer.nesterov=true"}).empty());
}

TEST(UnreadSettings, NamesSchedulerKeysTheChosenScheduleIgnores) {
  EXPECT_EQ(unread_with({"scheduler.name=step", "scheduler.min_lr=1e-5", "scheduler.gamma=0.5"}),
            std::vector<std::string>{"scheduler.min_lr is 1e-05, but scheduler step does not read it (cosine and plateau do)"});
  EXPECT_EQ(unread_with({"scheduler.name=cosine", "scheduler.patience=3"}),
            std::vector<std::string>{"scheduler.patience is 3, but scheduler cosine does not read it (only plateau does)"});
  EXPECT_TRUE(unread_with({"scheduler.name=plateau", "scheduler.patience=3", "scheduler.gamma=0.5", "scheduler.min_lr=1e-5"}).empty());
  EXPECT_EQ(unread_with({"scheduler.pct_start=0.1"}),
            std::vector<std::string>{"scheduler.pct_start is 0.1, but scheduler none does not read it (only onecycle does)"});
}

TEST(UnreadSettings, NamesModelKeysTheBuiltInModelIgnores) {
  EXPECT_EQ(unread_with({"model.name=resnet18", "model.dropout=0.2", "model.stem=imagenet"}),
            std::vector<std::string>{"model.dropout is 0.2, but resnet18 does not read it (mlp, small_cnn and transformer do)"});
  EXPECT_EQ(unread_with({"model.name=mlp", "model.hidden=[64]", "model.width=16"}),
            std::vector<std::string>{"model.width is 16, but mlp does not read it (only small_cnn does)"});
  EXPECT_EQ(
      unread_with({"model.torchscript=net.pt", "model.hidden=[64]"}),
      std::vector<std::string>{"model.hidden is [64], but a TorchScript model (model.torchscript) is built by its file, not by this key"});
}

// A factory the user registered may read any model key, so nothing is said of them; that includes
// a built-in name the user replaced.
TEST(UnreadSettings, SaysNothingOfModelKeysForAUserRegisteredModel) {
  const auto factory = [](const ModelSpec& spec) { return torch::nn::AnyModule(torch::nn::Linear(spec.input_shape.back(), spec.outputs)); };
  register_model("unread_settings_custom", factory);
  EXPECT_TRUE(unread_with({"model.name=unread_settings_custom", "model.dropout=0.3", "model.width=8"}).empty());
  EXPECT_FALSE(model_keys_read("unread_settings_custom").has_value());
  ASSERT_TRUE(model_keys_read("transformer").has_value());
  EXPECT_EQ(*model_keys_read("transformer"), (std::vector<std::string>{"model.layers", "model.d_model", "model.heads", "model.ff_dim",
                                                                       "model.dropout", "model.activation", "model.norm_first"}));
}

TEST(UnreadSettings, NamesChannelsLastForSamplesThatAreNotImages) {
  EXPECT_EQ(unread_with({"model.name=transformer", "data.shape=[32, 16]", "train.channels_last=true"}),
            std::vector<std::string>{"train.channels_last is true, but the samples are shaped [32, 16], not [channels, height, "
                                     "width]: only images have a channels-last layout"});
  EXPECT_TRUE(unread_with({"model.name=resnet18", "data.shape=[3, 32, 32]", "train.channels_last=true"}).empty());
  EXPECT_TRUE(unread_with({"model.name=mlp", "data.shape=[12]", "train.channels_last=false"}).empty());
}

// A fixed batch reads none of the batch search's settings.
TEST(UnreadSettings, NamesTheBatchSearchsKeysUnderAFixedBatch) {
  EXPECT_EQ(unread_with({"train.batch_size=8", "train.max_batch_size=4", "sizing.objective=throughput"}),
            (std::vector<std::string>{"train.max_batch_size is 4, but train.batch_size is 8: only train.batch_size auto reads it",
                                      "sizing.objective is throughput, but train.batch_size is 8: only train.batch_size auto reads it"}));
  EXPECT_TRUE(unread_with({"train.batch_size=auto", "train.max_batch_size=4", "sizing.target_fraction=0.5"}).empty());
}

TEST(UnreadSettings, NamesEmaEveryWithoutEmaAndMissingWithoutColumns) {
  EXPECT_EQ(unread_with({"train.ema_every=4"}),
            std::vector<std::string>{
                "train.ema_every is 4, but train.ema_decay is 0: there is no moving average to update (set train.ema_decay, e.g. 0.999)"});
  EXPECT_TRUE(unread_with({"train.ema_every=4", "train.ema_decay=0.99"}).empty());
  EXPECT_EQ(unread_with({"data.missing=mean"}),
            std::vector<std::string>{"data.missing is mean, but data.source is synthetic: only csv and postgres data can miss values"});
}

TEST(UnreadSettings, NamesThePostgresKeysOfAnotherSource) {
  EXPECT_EQ(unread_with({"data.streams=2"}),
            std::vector<std::string>{"data.streams is set, but data.source is synthetic: only data.source postgres reads it"});
  EXPECT_TRUE(unread_with({"data.streams=auto"}).empty());
}

TEST(UnreadSettings, NamesAlertsWhoseReadingsAreNotTakenAndATraceWithoutItsStart) {
  EXPECT_EQ(unread_with({"logging.system_every=off", "logging.alerts.temperature_c=80"}),
            std::vector<std::string>{"logging.alerts.temperature_c is 80, but logging.system_every is off: the readings it watches are "
                                     "not taken (set it, e.g. 10s)"});
  EXPECT_EQ(unread_with({"logging.grad_norm=false", "logging.alerts.grad_norm=5"}),
            std::vector<std::string>{"logging.alerts.grad_norm is 5, but logging.grad_norm is false: the norm it watches is not measured"});
  EXPECT_TRUE(unread_with({"logging.system_every=30s", "logging.alerts.temperature_c=off"}).empty());
  EXPECT_EQ(unread_with({"train.profile.steps=3"}),
            std::vector<std::string>{"train.profile.steps is 3, but train.profile.start_step is 0: no steps are traced (set it, e.g. 20)"});
}

// What each kind of value takes (integers, booleans, durations, sizes, labels, merge keys) and the
// combinations of values that are refused because they contradict one another or learn nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/config_errors.hpp"

using namespace gputrain;
using test_support::config_error;
using train::load_config;

TEST(Config, BatchSizeAcceptsAuto) { EXPECT_FALSE(load_config({{}, {"train.batch_size=auto"}, ""}).train.batch_size.has_value()); }

TEST(Config, ChannelsLastAutoPicksNhwcForTheBuiltInConvolutionalModelsOnly) {
  const auto resolved = [](std::vector<std::string> sets) { return load_config({{}, std::move(sets), ""}).uses_channels_last(); };
  EXPECT_FALSE(load_config({}).train.channels_last.has_value());  // auto is the default
  for (const char* conv : {"small_cnn", "resnet18", "resnet34", "resnet50"})
    EXPECT_TRUE(resolved({std::string("model.name=") + conv, "data.shape=[3, 32, 32]"})) << conv;
  EXPECT_FALSE(resolved({"model.name=mlp"}));
  EXPECT_FALSE(resolved({"model.name=transformer", "data.shape=[16, 8]"}));
  EXPECT_FALSE(resolved({"model.name=resnet18", "model.torchscript=net.pt"}));  // may .view() an activation
  EXPECT_FALSE(resolved({"model.name=resnet18", "train.channels_last=false"}));
  EXPECT_TRUE(resolved({"model.name=mlp", "train.channels_last=true"}));
  EXPECT_NE(config_error({{}, {"train.channels_last=sometimes"}, ""}).find("true, false or auto"), std::string::npos);
}

TEST(Config, DataExcludeIsForCsvAndNotBesideDataFeatures) {
  EXPECT_NE(config_error({{}, {"data.source=npy", "data.path=x.npy", "data.labels=y.npy", "data.exclude=[id]"}, ""})
                .find("data.exclude names CSV columns, but data.source is npy"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.source=csv", "data.path=x.csv", "data.labels=y", "data.exclude=[id]", "data.features=[a]"}, ""})
                .find("data.exclude and data.features are both set"),
            std::string::npos);
}

TEST(Config, LabelSmoothingIsForClassification) {
  EXPECT_NE(config_error({{}, {"data.task=regression", "train.label_smoothing=0.1"}, ""})
                .find("train.label_smoothing softens class targets, but data.task is regression"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"train.label_smoothing=1.5"}, ""}).find("train.label_smoothing"), std::string::npos);
}

TEST(Config, ClassWeightsAreNoneBalancedOrOnePerClass) {
  EXPECT_FALSE(load_config({}).train.class_weights.any());
  EXPECT_TRUE(load_config({{}, {"train.class_weights=balanced"}, ""}).train.class_weights.balanced);
  const auto given = load_config({{}, {"data.classes=3", "train.class_weights=[1, 0, 4.5]"}, ""});
  EXPECT_EQ(given.train.class_weights.given, (std::vector<double>{1, 0, 4.5}));
  EXPECT_FALSE(given.train.class_weights.balanced);
  EXPECT_NE(train::to_yaml(given).find("  class_weights: [1, 0, 4.5]\n"), std::string::npos) << train::to_yaml(given);
  EXPECT_FALSE(load_config({{}, {"train.class_weights=balanced", "train.class_weights=none"}, ""}).train.class_weights.any());
  // A list when data.classes is auto is checked once the labels give the classes (open_data).
  EXPECT_EQ(load_config({{}, {"data.classes=auto", "train.class_weights=[1, 2]"}, ""}).train.class_weights.given.size(), 2U);

  EXPECT_NE(
      config_error({{}, {"train.class_weights=balance"}, ""})
          .find("train.class_weights: found 'balance'; allowed: none, balanced, or a list of numbers >= 0, one per class (e.g. [1, 4.5]); "
                "did you mean 'balanced'?"),
      std::string::npos);
  EXPECT_NE(config_error({{}, {"train.class_weights=[1, -2]"}, ""}).find("found '-2'; allowed: a number >= 0"), std::string::npos);
  EXPECT_NE(config_error({{}, {"data.classes=3", "train.class_weights=[1, 2]"}, ""})
                .find("train.class_weights lists 2 weights but data.classes is 3\n  fix: give one weight per class (class 0 first)"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.classes=2", "train.class_weights=[0, 0]"}, ""}).find("train.class_weights are all 0"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.task=regression", "train.class_weights=balanced"}, ""})
                .find("train.class_weights weighs the classes' samples in the loss, but data.task is regression"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.task=regression", "checkpoint.best_metric=val_balanced_accuracy"}, ""})
                .find("checkpoint.best_metric val_balanced_accuracy needs data.task classification"),
            std::string::npos);
}

TEST(Config, DataCategoricalIsForCsv) {
  EXPECT_NE(config_error({{}, {"data.source=npy", "data.path=x.npy", "data.labels=y.npy", "data.categorical=[colour]"}, ""})
                .find("data.categorical names CSV columns of categories, but data.source is npy"),
            std::string::npos);
}

// scheduler.min_lr above a rate it lowers made the cosine schedule raise that rate all run, silently.
TEST(Config, AMinimumRateAboveARateItLowersIsRefused) {
  const auto above = config_error({{}, {"scheduler.name=cosine", "scheduler.min_lr=0.5", "optimizer.lr=0.1"}, ""});
  EXPECT_NE(above.find("scheduler.min_lr 0.5 is above the learning rate it would lower (0.1, optimizer.lr): the cosine schedule would "
                       "raise it all run"),
            std::string::npos)
      << above;
  const auto group = config_error(
      {{},
       {"scheduler.name=plateau", "scheduler.min_lr=0.001", "optimizer.lr=0.1", "optimizer.param_groups=[{params: [fc], lr: 1.0e-4}]"},
       ""});
  EXPECT_NE(group.find("(0.0001, an optimizer.param_groups entry's): plateau's floor would sit above it"), std::string::npos) << group;
  EXPECT_EQ(load_config({{}, {"scheduler.name=cosine", "scheduler.min_lr=0.001", "optimizer.lr=0.1"}, ""}).scheduler.min_lr, 0.001);
  EXPECT_EQ(load_config({{}, {"scheduler.name=step", "scheduler.min_lr=0.5", "optimizer.lr=0.1"}, ""}).scheduler.min_lr, 0.5);  // unread
}

// Values at the ends of their ranges that left a run learning nothing, silently, or ended it with a
// NaN blamed on the learning rate (Adam's eps 0, where a gradient is exactly 0).
TEST(Config, ValuesThatLeaveARunLearningNothingAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"optimizer.name=adamw", "optimizer.eps=0"}, "optimizer.eps 0 makes adamw's update m / (sqrt(v) + eps) 0 / 0"},
      {{"optimizer.name=sgd", "optimizer.momentum=1"}, "optimizer.momentum 1 never lets a gradient fade"},
      {{"train.label_smoothing=1"}, "train.label_smoothing 1 replaces every target with the uniform distribution"},
      {{"scheduler.name=step", "scheduler.gamma=0"}, "scheduler.gamma 0 sets the learning rate to 0 at the first decay"},
      {{"scheduler.name=plateau", "scheduler.gamma=0", "data.val_samples=64"}, "to 0 at the first plateau"},
  };
  for (const auto& [sets, expected] : cases) {
    const auto message = config_error({{}, sets, ""});
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  // Where the value is not read, or just inside the range, it stays allowed.
  EXPECT_EQ(load_config({{}, {"optimizer.name=sgd", "optimizer.eps=0"}, ""}).optimizer.eps, 0.0);
  EXPECT_EQ(load_config({{}, {"optimizer.name=adam", "optimizer.momentum=1"}, ""}).optimizer.momentum, 1.0);
  EXPECT_EQ(load_config({{}, {"optimizer.name=sgd", "optimizer.momentum=0.99"}, ""}).optimizer.momentum, 0.99);
  EXPECT_EQ(load_config({{}, {"train.label_smoothing=0.9"}, ""}).train.label_smoothing, 0.9);
  EXPECT_EQ(load_config({{}, {"scheduler.name=cosine", "scheduler.gamma=0"}, ""}).scheduler.gamma, 0.0);
}

// Rates and scales past float32 stopped the first step with LibTorch's "value cannot be converted
// to type float without overflow", with no fix; a weight decay that takes all of a weight each
// step ended in a NaN blamed on the learning rate.
TEST(Config, ValuesPastFloatAndADecayThatTakesEveryWeightAreRefused) {
  for (const std::string key : {"optimizer.lr", "optimizer.eps", "optimizer.weight_decay", "train.clip_grad_norm", "scheduler.min_lr"}) {
    const auto message = config_error({{}, {key + "=1e300"}, ""});
    EXPECT_NE(message.find(key + ": found '1e300'; allowed: a number >= 0 and <= 3.4e+38"), std::string::npos) << message;
  }
  EXPECT_NE(config_error({{}, {"data.std=[1e300]"}, ""}).find("data.std[0]: found '1e300'"), std::string::npos);
  EXPECT_NE(config_error({{}, {"optimizer.param_groups=[{params: [fc], lr: 1e39}]"}, ""}).find("allowed: a number >= 0 and <= 3.4e+38"),
            std::string::npos);
  const auto decay = config_error({{}, {"optimizer.name=adamw", "optimizer.lr=0.01", "optimizer.weight_decay=100"}, ""});
  EXPECT_NE(decay.find("the weight decay 100 at learning rate 0.01 takes lr x weight_decay = 1 of every weight each step (1 or more)"),
            std::string::npos)
      << decay;
  EXPECT_NE(decay.find("(AdamW's usual: 0.01 to 0.1)"), std::string::npos) << decay;
  const auto group = config_error({{}, {"optimizer.name=sgd", "optimizer.param_groups=[{params: [fc], lr: 0.5, weight_decay: 4}]"}, ""});
  EXPECT_NE(group.find("optimizer.param_groups[0]'s weight decay 4 at learning rate 0.5 takes lr x weight_decay = 2"), std::string::npos)
      << group;
  EXPECT_EQ(load_config({{}, {"optimizer.name=adam", "optimizer.lr=0.01", "optimizer.weight_decay=100"}, ""}).optimizer.weight_decay, 100);
  EXPECT_EQ(load_config({{}, {"optimizer.name=adamw", "optimizer.lr=0.001", "optimizer.weight_decay=0.1"}, ""}).optimizer.weight_decay,
            0.1);
}

// The launcher across nodes: each node's ranks, its place, and where they all meet, or an error
// naming what is missing before anything starts.
TEST(Config, SeveralNodesNeedRanksAPlaceAndWhereToMeet) {
  const auto config = load_config({{},
                                   {"distributed.nproc_per_node=8", "distributed.nnodes=2", "distributed.node_rank=1",
                                    "distributed.master_addr=node0.cluster", "distributed.master_port=29500"},
                                   ""});
  EXPECT_EQ(config.distributed.nnodes, 2);
  EXPECT_EQ(config.distributed.node_rank, 1);
  EXPECT_EQ(config.distributed.master_addr, "node0.cluster");
  const std::vector<std::string> meet{"distributed.master_addr=node0", "distributed.master_port=29500"};
  const auto with = [&](std::vector<std::string> settings, bool meeting = true) {
    if (meeting) settings.insert(settings.end(), meet.begin(), meet.end());
    return config_error({{}, settings, ""});
  };
  EXPECT_NE(with({"distributed.nnodes=2"}).find("distributed.nnodes is 2, but distributed.nproc_per_node is 0"), std::string::npos);
  EXPECT_NE(with({"distributed.nproc_per_node=8", "distributed.nnodes=2", "distributed.node_rank=2"})
                .find("distributed.node_rank is 2, but distributed.nnodes is 2 (node ranks are 0 .. 1)"),
            std::string::npos);
  EXPECT_NE(with({"distributed.nproc_per_node=8", "distributed.nnodes=2"}, false).find("distributed.master_addr is not set"),
            std::string::npos);
  EXPECT_NE(with({"distributed.nproc_per_node=8", "distributed.nnodes=2", "distributed.backend=mpi"})
                .find("CPU ranks on several nodes are mpirun's to start"),
            std::string::npos);
  EXPECT_NE(with({"distributed.node_rank=1"}, false).find("distributed.node_rank is 1, but distributed.nnodes is 1"), std::string::npos);
}

// Counts are often written large: 1e5, 100_000, 3.0 are whole numbers and read as such; a fraction
// is not, and no more than a word is.
TEST(Config, IntegerKeysTakeWholeNumbersHoweverTheyAreWritten) {
  EXPECT_EQ(load_config({{}, {"train.max_steps=1e5"}, ""}).train.max_steps, 100000);
  EXPECT_EQ(load_config({{}, {"train.max_steps=100_000"}, ""}).train.max_steps, 100000);
  EXPECT_EQ(load_config({{}, {"train.epochs=3.0"}, ""}).train.epochs, 3);
  EXPECT_EQ(load_config({{}, {"train.batch_size=5e2"}, ""}).train.batch_size, 500);
  EXPECT_EQ(load_config({{}, {"data.image_size=1.28e2"}, ""}).data.image_size, (std::vector<std::int64_t>{128, 128}));
  EXPECT_NE(config_error({{}, {"train.epochs=2.5"}, ""}).find("train.epochs: found '2.5'; allowed: an integer >= 1"), std::string::npos);
  EXPECT_NE(config_error({{}, {"train.max_steps=1e400"}, ""}).find("found '1e400'"), std::string::npos);
  EXPECT_NE(config_error({{}, {"train.epochs=ten"}, ""}).find("found 'ten'"), std::string::npos);
}

// A boolean as YAML writes one: true/True/TRUE (1.2), yes/on and their cases (1.1, as PyYAML).
TEST(Config, BooleansTakeYamlsSpellings) {
  for (const std::string yes : {"true", "True", "TRUE", "yes", "Yes", "on", "ON"})
    EXPECT_TRUE(load_config({{}, {"train.deterministic=" + yes}, ""}).train.deterministic) << yes;
  for (const std::string no : {"false", "False", "FALSE", "no", "No", "off", "OFF"})
    EXPECT_FALSE(load_config({{}, {"train.deterministic=true", "train.deterministic=" + no}, ""}).train.deterministic) << no;
  EXPECT_NE(config_error({{}, {"train.deterministic=1"}, ""}).find("train.deterministic: found '1'; allowed: true or false"),
            std::string::npos);
}

// YAML merge keys as PyYAML reads them: the keys written out win, then the merged mappings in
// order; a top-level x- key holds the anchors and is not read.
TEST(Config, MergeKeysCopyAnAnchoredMappingAndXKeysHoldIt) {
  const auto config = load_config({{},
                                   {},
                                   "x-optimizer: &opt\n  lr: 0.01\n  weight_decay: 0.0001\n"
                                   "optimizer:\n  <<: *opt\n  name: sgd\n  lr: 0.05\n"
                                   "train:\n  <<: [{epochs: 3}, {epochs: 9, seed: 7}]\n"});
  EXPECT_EQ(config.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(config.optimizer.lr, 0.05);
  EXPECT_DOUBLE_EQ(config.optimizer.weight_decay, 0.0001);
  EXPECT_EQ(config.train.epochs, 3);
  EXPECT_EQ(config.train.seed, 7);
  EXPECT_NE(config_error({{}, {}, "x-lr: &lr 0.01\noptimizer:\n  <<: *lr\n"})
                .find("'optimizer.<<' merges mappings into this one, and it is given something else"),
            std::string::npos);
  // A merged key is not a key set twice; one written twice still is.
  EXPECT_NE(config_error({{}, {}, "train:\n  epochs: 2\n  epochs: 3\n  <<: {seed: 1}\n"}).find("'train.epochs' is set twice"),
            std::string::npos);
  // A holder without the prefix is an unknown key, whose fix names the prefix.
  const auto holder = config_error({{}, {}, "defaults: &d\n  lr: 0.1\noptimizer:\n  <<: *d\n"});
  EXPECT_NE(holder.find("unknown key 'defaults'"), std::string::npos) << holder;
  EXPECT_NE(holder.find("starts with x-, as x-defaults"), std::string::npos) << holder;
  EXPECT_EQ(config_error({{}, {}, "trian:\n  epochs: 1\n"}).find("x-"), std::string::npos) << "a misspelt section gets its guess alone";
  // Hydra's defaults is a list of configs to compose: gputrain's way is files in order.
  EXPECT_NE(config_error({{}, {}, "defaults:\n  - base\ntrain:\n  epochs: 1\n"}).find("gputrain from files given in order"),
            std::string::npos);
}

// data.labels is one name (a file, key or column) or, for CSV regression, a list of columns; one
// prints as it was written, a list as a list, and both read back.
TEST(Config, DataLabelsIsANameOrAListOfColumns) {
  const auto one = load_config({{}, {"data.source=csv", "data.path=t.csv", "data.labels=y"}, ""});
  EXPECT_EQ(one.data.labels, (std::vector<std::string>{"y"}));
  EXPECT_NE(train::to_yaml(one).find("  labels: y\n"), std::string::npos) << train::to_yaml(one);
  const auto two = load_config({{}, {"data.source=csv", "data.path=t.csv", "data.labels=[y1, y2]"}, ""});
  EXPECT_EQ(two.data.labels, (std::vector<std::string>{"y1", "y2"}));
  EXPECT_NE(train::to_yaml(two).find("  labels: [y1, y2]\n"), std::string::npos) << train::to_yaml(two);
  EXPECT_TRUE(load_config({{}, {"data.source=csv", "data.path=t.csv", "data.labels=y", "data.labels="}, ""}).data.labels.empty())
      << "no value unsets it";
  EXPECT_NE(config_error({{}, {"data.labels={a: 1}"}, ""})
                .find("allowed: a file (npy), key (npz, safetensors), or column or list of columns (csv)"),
            std::string::npos);
}

// One integer is a square, as torchvision's transforms take a size; a list is [height, width].
TEST(Config, DataImageSizeIsASquareOrHeightAndWidth) {
  EXPECT_EQ(load_config({{}, {"data.image_size=32"}, ""}).data.image_size, (std::vector<std::int64_t>{32, 32}));
  const auto both = load_config({{}, {"data.image_size=[32, 48]"}, ""});
  EXPECT_EQ(both.data.image_size, (std::vector<std::int64_t>{32, 48}));
  EXPECT_NE(train::to_yaml(both).find("  image_size: [32, 48]\n"), std::string::npos) << train::to_yaml(both);
  EXPECT_NE(config_error({{}, {"data.image_size=[32]"}, ""}).find("allowed: [height, width], e.g. [224, 224], or one integer for a square"),
            std::string::npos);
  for (const char* bad :
       {"data.image_size=0", "data.image_size=big", "data.image_size=3.5", "data.image_size=100000", "data.image_size=[64, 9000]"})
    EXPECT_NE(config_error({{}, {bad}, ""}).find("or one integer for a square, each side from 1 to 8192 (tile larger images)"),
              std::string::npos)
        << bad;
}

// train.max_time takes a duration with its unit or a clock, prints in the shortest form, and
// refuses a bare number (minutes to SLURM, seconds elsewhere) with both readings as the fix.
TEST(Config, MaxTimeIsADurationWithItsUnit) {
  EXPECT_EQ(load_config({}).train.max_time, 0.0) << "no limit unless asked";
  EXPECT_EQ(load_config({{}, {"train.max_time=1h30m"}, ""}).train.max_time, 5400.0);
  EXPECT_EQ(load_config({{}, {"train.max_time=0-11:30:00"}, ""}).train.max_time, 41400.0);
  EXPECT_EQ(load_config({{}, {"train.max_time=1h", "train.max_time=none"}, ""}).train.max_time, 0.0);
  const auto text = train::to_yaml(load_config({{}, {"train.max_time=02:30:00"}, ""}));
  EXPECT_NE(text.find("  max_time: 2h30m\n"), std::string::npos) << text;
  EXPECT_NE(train::to_yaml(load_config({})).find("  max_time: none\n"), std::string::npos);
  const auto bare = config_error({{}, {"train.max_time=30"}, ""});
  EXPECT_NE(bare.find("train.max_time: found '30'; allowed: a duration such as 45m, 2h, 1h30m, 1d or 11:30:00 (H:MM:SS), or none"),
            std::string::npos)
      << bare;
  EXPECT_NE(bare.find("a number alone has no unit: write 30m or 30s"), std::string::npos) << bare;
  const auto wrong = config_error({{}, {"train.max_time=2 hours"}, ""});
  EXPECT_NE(wrong.find("found '2 hours'"), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("no unit"), std::string::npos) << "the hint is for a bare number only: " << wrong;
}

// Other tools' words for auto and never (Hugging Face's `resume_from_checkpoint: true`, Lightning's
// `ckpt_path: last`) and `best` are said at their line, not looked for as files once the data opened.
TEST(Config, ResumeWordsOfOtherToolsAreNamedAtLoad) {
  const auto error = config_error({{}, {"checkpoint.resume=true"}, ""});
  EXPECT_NE(error.find("--set checkpoint.resume=true: checkpoint.resume 'true' is no file here: going on from the newest checkpoint of "
                       "the run folder is checkpoint.resume: auto, the default"),
            std::string::npos)
      << error;
  EXPECT_NE(config_error({{}, {"checkpoint.resume=last"}, ""}).find("set checkpoint.resume: auto"), std::string::npos);
  EXPECT_NE(config_error({{}, {"checkpoint.resume=false"}, ""}).find("set checkpoint.resume: never"), std::string::npos);
  EXPECT_NE(config_error({{}, {"checkpoint.resume=best"}, ""}).find("checkpoints/best.pt"), std::string::npos);
  // auto, never and a path are taken as before: a missing path is said when the run resumes.
  EXPECT_EQ(load_config({{}, {"checkpoint.resume=never"}, ""}).checkpoint.resume, "never");
  EXPECT_EQ(load_config({{}, {"checkpoint.resume=runs/x/checkpoints/step-00000010.pt"}, ""}).checkpoint.resume,
            "runs/x/checkpoints/step-00000010.pt");
}

// Words other tools use: "amp" for mixed precision, another backend's device (a Mac's mps).
TEST(Config, MixedPrecisionWordsAndOtherBackendsDevicesAreNamed) {
  const auto amp = config_error({{}, {"train.precision=amp"}, ""});
  EXPECT_NE(amp.find("found 'amp'; allowed: one of fp32, fp16-mixed, bf16-mixed; mixed precision is bf16-mixed"), std::string::npos) << amp;
  const auto mps = config_error({{}, {"device=mps"}, ""});
  EXPECT_NE(mps.find("'mps' is PyTorch's device for Apple's GPUs, which gputrain does not train on: NVIDIA GPUs (cuda) and CPUs"),
            std::string::npos)
      << mps;
  EXPECT_NE(config_error({{}, {"device=xpu:0"}, ""}).find("Intel's GPUs"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"device=cuda:1"}, ""}).device.name, "cuda:1");
}

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using train::ConfigSources;
using train::load_config;

namespace {

std::string fixture(const std::string& name) { return std::string(gputrain::test_support::test_data_dir()) + "/configs/" + name; }

// The UsageError message and remedy of loading `sources` (fails the test if it loads).
std::string error_of(const ConfigSources& sources) {
  try {
    load_config(sources);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    EXPECT_FALSE(e.remedy().empty());
    return std::string(e.what()) + "\n  fix: " + e.remedy();  // as the CLI prints it
  }
  ADD_FAILURE() << "expected a UsageError";
  return "";
}

}  // namespace

TEST(Config, DefaultsAreValid) {
  const auto c = load_config({});
  EXPECT_EQ(c.model.name, "auto");  // chosen by the data's sample shape (open_data)
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.train.precision, train::Precision::fp32);
  EXPECT_EQ(c.device.name, "auto");
  EXPECT_EQ(c.checkpoint_dir(), "runs/default/checkpoints");
}

TEST(Config, LaterFilesOverrideEarlierOnesAndSetOverridesFiles) {
  const auto one = load_config({{fixture("base.yaml")}, {}, ""});
  EXPECT_EQ(one.model.name, "mlp");
  EXPECT_EQ(one.model.hidden, std::vector<std::int64_t>{32});
  EXPECT_EQ(one.train.batch_size, 16);
  EXPECT_EQ(one.optimizer.name, "adamw");
  const auto two = load_config({{fixture("base.yaml"), fixture("override.yaml")}, {}, ""});
  EXPECT_EQ(two.train.batch_size, 8);
  EXPECT_EQ(two.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(two.optimizer.lr, 0.01);  // kept from base.yaml
  const auto three = load_config({{fixture("base.yaml"), fixture("override.yaml")},
                                  {"train.batch_size=4", "optimizer.betas=[0.8, 0.95]", "train.precision=bf16-mixed", "device=cuda:1"},
                                  ""});
  EXPECT_EQ(three.train.batch_size, 4);
  EXPECT_EQ(three.optimizer.betas, (std::vector<double>{0.8, 0.95}));
  EXPECT_EQ(three.train.precision, train::Precision::bf16_mixed);
  EXPECT_EQ(three.device.name, "cuda:1");
}

// A ready config's validation folder can be dropped from the command line; a key that needs a
// value still refuses none.
TEST(Config, AnEmptyValueUnsetsAnOptionalPathOnly) {
  const auto c = load_config({{}, {"data.val_path=data/val", "data.val_path=", "model.init_weights="}, ""});
  EXPECT_EQ(c.data.val_path, "");
  EXPECT_EQ(c.model.init_weights, "");
  EXPECT_NE(error_of({{}, {"logging.dir="}, ""}).find("logging.dir: found no value; allowed: a directory path"), std::string::npos);
}

// Synthetic data reads no files: a path set with it was meant for a file source, and training on
// generated samples instead would look like success.
TEST(Config, APathWithSyntheticDataIsAnErrorThatNamesTheSourceItLooksLike) {
  test_support::ScratchFolder folder("config-synthetic-path");
  const auto npy = (folder.path / "features.npy").string();
  std::ofstream(npy) << "x";
  const auto with_npy = error_of({{}, {"data.source=synthetic", "data.path=" + npy, "data.labels=y.npy"}, ""});
  EXPECT_NE(with_npy.find("data.path is set ('" + npy + "'), but data.source is synthetic"), std::string::npos) << with_npy;
  EXPECT_NE(with_npy.find("fix: set data.source: npy (" + npy + " looks like npy data), or remove data.path"), std::string::npos)
      << with_npy;
  const auto unknown = error_of({{}, {"data.val_path=val.bin"}, ""});
  EXPECT_NE(unknown.find("data.val_path is set ('val.bin')"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("set data.source to the format of your data (npy, npz, safetensors, csv, mnist, cifar10, image_folder)"),
            std::string::npos)
      << unknown;
  EXPECT_NO_THROW(load_config({{}, {"data.source=npy", "data.path=x.npy"}, ""})) << "a file source with its path is fine";
}

// A config file that sets nothing (empty, comments, a section with nothing under it) is a mistake,
// not a request to train the built-in defaults on synthetic data; with something else given it is
// harmless.
TEST(Config, ConfigFilesThatSetNothingAreRefused) {
  test_support::ScratchFolder folder("config-empty");
  const auto at = [&](const std::string& name) { return (folder.path / name).string(); };
  std::ofstream(at("empty.yaml")) << "";
  std::ofstream(at("comments.yaml")) << "# nothing here yet\n\n";
  std::ofstream(at("bare.yaml")) << "model:\n";
  std::ofstream(at("real.yaml")) << "train:\n  epochs: 2\n";
  for (const auto* name : {"empty.yaml", "comments.yaml", "bare.yaml"}) {
    const auto error = error_of({{at(name)}, {}, ""});
    EXPECT_NE(error.find("config file '" + at(name) + "' sets nothing: empty, or comments only"), std::string::npos) << error;
    EXPECT_NE(error.find("configs/quickstart.yaml"), std::string::npos) << error;
  }
  EXPECT_NE(error_of({{at("empty.yaml"), at("comments.yaml")}, {}, ""}).find("the config files (" + at("empty.yaml") + ", "),
            std::string::npos);
  EXPECT_EQ(load_config({{at("empty.yaml")}, {"train.epochs=3"}, ""}).train.epochs, 3);
  EXPECT_EQ(load_config({{at("empty.yaml"), at("real.yaml")}, {}, ""}).train.epochs, 2);
  EXPECT_NO_THROW(load_config({{}, {}, ""})) << "no file at all: the caller decides";
}

// data.path without data.source reads the path as the format it names, as `gputrain profile
// --path` does: the source the error's fix would name anyway. One given anywhere (file, --set,
// flag) is kept, and a path whose format cannot be told is an error at the line that set it.
TEST(Config, APathWithoutASourceIsReadAsTheFormatItNames) {
  test_support::ScratchFolder folder("config-told-source");
  const auto at = [&](const std::string& name) { return (folder.path / name).string(); };
  std::ofstream(at("x.csv")) << "a,y\n1,0\n";
  std::ofstream(at("weights.bin")) << "x";
  std::filesystem::create_directories(folder.path / "images" / "cat");
  std::filesystem::create_directories(folder.path / "empty");
  EXPECT_EQ(load_config({{}, {"data.path=" + at("x.csv"), "data.labels=y"}, ""}).data.source, "csv");
  EXPECT_EQ(load_config({{}, {"data.path=" + at("x.npy"), "data.labels=y.npy"}, ""}).data.source, "npy")
      << "a missing file is told by its name, so that its reader says it is missing";
  EXPECT_EQ(load_config({{}, {"data.path=" + at("images")}, ""}).data.source, "image_folder");
  ConfigSources flagged;
  flagged.flags = {{"--path", "data.path", {at("x.csv")}}};
  EXPECT_EQ(load_config(flagged).data.source, "csv");
  const auto yaml = at("config.yaml");
  std::ofstream(yaml) << "data:\n  source: npz\n  path: " << at("x.csv") << "\n";
  EXPECT_EQ(load_config({{yaml}, {}, ""}).data.source, "npz") << "the source given is kept, whatever the path's name says";
  EXPECT_EQ(load_config({{yaml}, {"data.path=" + at("x.npy")}, ""}).data.source, "npz");
  EXPECT_EQ(load_config({{}, {}, ""}).data.source, "synthetic") << "no path: the default";
  EXPECT_EQ(load_config({{}, {"data.path=" + at("x.csv"), "data.path="}, ""}).data.source, "synthetic") << "a path set back to none";

  const auto unknown = error_of({{}, {"data.path=" + at("weights.bin")}, ""});
  EXPECT_NE(unknown.find("--set data.path=" + at("weights.bin") + ": cannot tell the format of '" + at("weights.bin") +
                         "' from its name or contents, and data.source is not set"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("fix: set data.source to its format (npy, npz, safetensors, csv, mnist, cifar10, image_folder)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(error_of({{}, {"data.path=" + at("empty")}, ""}).find("cannot tell the format of"), std::string::npos);
  // A format gputrain does not read is named, with the command that writes one it does.
  for (const auto& [name, what, fix] : std::vector<std::array<std::string, 3>>{
           {"sales.parquet", "is a Parquet file, which gputrain does not read", "p.read_parquet('" + at("sales.parquet") + "').to_csv("},
           {"tensors.pt", "is a torch.save file (a pickle), which gputrain does not read",
            "save_file({'x': x, 'y': y}, 'data.safetensors')"},
           {"data.h5", "is an HDF5 file, which gputrain does not read", "n.savez('data.npz'"}}) {
    std::ofstream(at(name)) << "x";
    const auto message = error_of({{}, {"data.path=" + at(name)}, ""});
    EXPECT_NE(message.find("data.path '" + at(name) + "' " + what), std::string::npos) << message;
    EXPECT_NE(message.find(fix), std::string::npos) << message;
  }
  const auto in_file = at("typo.yaml");
  std::ofstream(in_file) << "data:\n  path: " << at("x.cs") << "\n";
  const auto missing = error_of({{in_file}, {}, ""});
  EXPECT_NE(missing.find(in_file + ":2:9: data.path '" + at("x.cs") + "' does not exist (did you mean '" + at("x.csv") + "'?)"),
            std::string::npos)
      << missing;
}

// A command's own flag (gputrain profile --path, --labels) takes its value as written: YAML would
// cut "x #1.csv" at the comment and read "a: b.npy" as a mapping.
// A NUL in a text setting would cut it short where it is handed on (libpq would get the query up
// to it, open() the path up to it) and drop the rest without a word: refused, naming where.
TEST(Config, ANulInsideATextSettingIsRefusedNotCutShort) {
  test_support::ScratchFolder dir("config-nul");
  const auto yaml = (dir.path / "nul.yaml").string();
  std::ofstream(yaml) << "data:\n  source: postgres\n  dsn: postgresql:///x\n  query: \"SELECT a, label FROM t\\0 WHERE split = 1\"\n"
                         "  labels: label\n";
  const auto message = error_of({{yaml}, {}, ""});
  EXPECT_NE(message.find("nul.yaml:4"), std::string::npos) << message;
  EXPECT_NE(message.find("data.query: holds a NUL character (\\0) at position 23 of 39"), std::string::npos) << message;
  EXPECT_NE(error_of({{}, {"data.features=[a, \"b\\0c\"]"}, ""}).find("data.features[1]: holds a NUL character"), std::string::npos);
}

TEST(Config, FlagValuesAreTakenAsWrittenAndBeatSet) {
  ConfigSources sources;
  sources.overrides = {"data.source=csv", "data.path=other.csv"};
  sources.flags = {{"--path", "data.path", {"runs #2/x: y.csv"}}, {"--labels", "data.labels", {"y1", "y2"}}};
  const auto c = load_config(sources);
  EXPECT_EQ(c.data.path, "runs #2/x: y.csv");
  EXPECT_EQ(c.data.labels, (std::vector<std::string>{"y1", "y2"}));
  ConfigSources one_label = sources;
  one_label.flags = {{"--labels", "data.labels", {"[y]"}}};
  EXPECT_EQ(load_config(one_label).data.labels, std::vector<std::string>{"[y]"}) << "a single value is a name, not a YAML list";
  ConfigSources bad;
  bad.flags = {{"--max-memory", "device.max_memory", {"lots"}}};
  const auto error = error_of(bad);
  EXPECT_NE(error.find("--max-memory lots: device.max_memory: found 'lots'"), std::string::npos)
      << "the error names the flag, not --set: " << error;
}

TEST(Config, EmbeddedConfigIsOverriddenByFiles) {
  const auto c = load_config({{fixture("override.yaml")}, {}, "train:\n  batch_size: 99\n  epochs: 7\n"});
  EXPECT_EQ(c.train.batch_size, 8);
  EXPECT_EQ(c.train.epochs, 7);
}

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
  EXPECT_NE(error_of({{}, {"train.channels_last=sometimes"}, ""}).find("true, false or auto"), std::string::npos);
}

TEST(Config, BadValueNamesFileLineColumnFoundAndAllowed) {
  const auto message = error_of({{fixture("bad_precision.yaml")}, {}, ""});
  EXPECT_NE(message.find("bad_precision.yaml:5:14"), std::string::npos) << message;
  EXPECT_NE(message.find("train.precision"), std::string::npos) << message;
  EXPECT_NE(message.find("'fp61'"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32, fp16-mixed, bf16-mixed"), std::string::npos) << message;
}

TEST(Config, UnknownKeyInWrongSectionSuggestsTheRightOne) {
  const auto message = error_of({{fixture("unknown_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("unknown_key.yaml:3:3"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'optimizer.lr'"), std::string::npos) << message;
}

TEST(Config, MisspelledKeySuggestsTheClosest) {
  const auto message = error_of({{fixture("typo_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("did you mean 'train.epochs'"), std::string::npos) << message;
}

TEST(Config, DataExcludeIsForCsvAndNotBesideDataFeatures) {
  EXPECT_NE(error_of({{}, {"data.source=npy", "data.path=x.npy", "data.labels=y.npy", "data.exclude=[id]"}, ""})
                .find("data.exclude names CSV columns, but data.source is npy"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"data.source=csv", "data.path=x.csv", "data.labels=y", "data.exclude=[id]", "data.features=[a]"}, ""})
                .find("data.exclude and data.features are both set"),
            std::string::npos);
}

TEST(Config, LabelSmoothingIsForClassification) {
  EXPECT_NE(error_of({{}, {"data.task=regression", "train.label_smoothing=0.1"}, ""})
                .find("train.label_smoothing softens class targets, but data.task is regression"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.label_smoothing=1.5"}, ""}).find("train.label_smoothing"), std::string::npos);
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
      error_of({{}, {"train.class_weights=balance"}, ""})
          .find("train.class_weights: found 'balance'; allowed: none, balanced, or a list of numbers >= 0, one per class (e.g. [1, 4.5]); "
                "did you mean 'balanced'?"),
      std::string::npos);
  EXPECT_NE(error_of({{}, {"train.class_weights=[1, -2]"}, ""}).find("found '-2'; allowed: a number >= 0"), std::string::npos);
  EXPECT_NE(error_of({{}, {"data.classes=3", "train.class_weights=[1, 2]"}, ""})
                .find("train.class_weights lists 2 weights but data.classes is 3\n  fix: give one weight per class (class 0 first)"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"data.classes=2", "train.class_weights=[0, 0]"}, ""}).find("train.class_weights are all 0"), std::string::npos);
  EXPECT_NE(error_of({{}, {"data.task=regression", "train.class_weights=balanced"}, ""})
                .find("train.class_weights weighs the classes' samples in the loss, but data.task is regression"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"data.task=regression", "checkpoint.best_metric=val_balanced_accuracy"}, ""})
                .find("checkpoint.best_metric val_balanced_accuracy needs data.task classification"),
            std::string::npos);
}

TEST(Config, DataCategoricalIsForCsv) {
  EXPECT_NE(error_of({{}, {"data.source=npy", "data.path=x.npy", "data.labels=y.npy", "data.categorical=[colour]"}, ""})
                .find("data.categorical names CSV columns of categories, but data.source is npy"),
            std::string::npos);
}

// Users bring other tools' names along; those whose meaning is the same here are translated.
TEST(Config, AnotherToolsNameForAKeyIsTranslated) {
  EXPECT_NE(error_of({{}, {"max_epochs=3"}, ""}).find("unknown key 'max_epochs'; Lightning's max_epochs is train.epochs here"),
            std::string::npos);
  EXPECT_NE(
      error_of({{}, {"train.fp16=true"}, ""}).find("unknown key 'train.fp16'; Hugging Face's fp16 is train.precision: fp16-mixed here"),
      std::string::npos);
  EXPECT_NE(error_of({{}, {"output_dir=runs/x"}, ""}).find("Hugging Face's output_dir is logging.dir here"), std::string::npos);
  EXPECT_NE(error_of({{}, {"label_smoothing_factor=0.1"}, ""}).find("Hugging Face's label_smoothing_factor is train.label_smoothing here"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.patience=5"}, ""}).find("Lightning's EarlyStopping's patience is train.early_stop_patience here"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.class_weight=balanced"}, ""}).find("scikit-learn's class_weight is train.class_weights here"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.mixed_precision=bf16"}, ""})
                .find("Accelerate's mixed_precision is train.precision (bf16-mixed, fp16-mixed) here"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.grad_clip=1.0"}, ""}).find("nanoGPT's grad_clip is train.clip_grad_norm here"), std::string::npos);
}

// A section indented under another section is pointed to where it belongs.
TEST(Config, ASectionWrittenInsideAnotherIsPointedToItsPlace) {
  EXPECT_NE(error_of({{}, {"train.scheduler=cosine"}, ""})
                .find("unknown key 'train.scheduler'; scheduler is a section of its own: did you mean 'scheduler.name'?"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.device=cpu"}, ""})
                .find("unknown key 'train.device'; device is a section of its own: did you mean 'device.name'?"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.logging=x"}, ""}).find("unknown key 'train.logging'; logging is a section of its own, at the top level"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"train.lr_scheduler=cosine"}, ""}).find("Lightning's lr_scheduler is scheduler.name here"), std::string::npos);
}

TEST(Config, MisspelledSectionSuggestsTheSection) {
  const auto message = error_of({{fixture("typo_section.yaml")}, {}, ""});
  EXPECT_NE(message.find("typo_section.yaml:3:1"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key 'trian'; did you mean 'train'?"), std::string::npos) << message;
  EXPECT_NE(message.find("the top-level sections are: model, data, train"), std::string::npos) << message;
}

TEST(Config, UnknownKeyInAKnownSectionListsThatSectionsKeys) {
  const auto message = error_of({{}, {"data.kind=npy"}, ""});
  EXPECT_NE(message.find("unknown key 'data.kind'"), std::string::npos) << message;
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;  // nothing in data is close to 'kind'
  EXPECT_NE(message.find("the keys of data are: source, task, path"), std::string::npos) << message;
}

TEST(Config, WrongTypeSaysWhatIsAllowed) {
  const auto message = error_of({{fixture("wrong_type.yaml")}, {}, ""});
  EXPECT_NE(message.find("wrong_type.yaml:3:15"), std::string::npos) << message;
  EXPECT_NE(message.find("'sixty-four'"), std::string::npos) << message;
  EXPECT_NE(message.find("an integer >= 1 or auto"), std::string::npos) << message;
}

// A near-miss of a named value gets a guess: another case, a prefix, a typo, PyTorch's "cuda".
TEST(Config, ANearMissOfAChoiceGetsAGuess) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"optimizer.name=Adam", "; did you mean 'adam'?"},
      {"train.precision=bf16", "; did you mean 'bf16-mixed'?"},
      {"scheduler.name=cosin", "; did you mean 'cosine'?"},
      {"model.name=resnet", "; did you mean one of 'resnet18', 'resnet34', 'resnet50'?"},
      {"device=gpu", "; did you mean 'cuda'?"},
      {"device=GPU:1", "; did you mean 'cuda:1'?"},
      {"device=CPU", "; did you mean 'cpu'?"},
      // Other tools' values: Lightning's precision, dtype names, PyTorch's class paths.
      {"train.precision=16", "; did you mean 'fp16-mixed'?"},
      {"train.precision=32", "; did you mean 'fp32'?"},
      {"train.precision=bfloat16", "; did you mean 'bf16-mixed'?"},
      {"optimizer.name=torch.optim.AdamW", "; did you mean 'adamw'?"},
      {"scheduler.name=CosineAnnealingLR", "; did you mean 'cosine'?"},
      {"scheduler.name=torch.optim.lr_scheduler.OneCycleLR", "; did you mean 'onecycle'?"},
  };
  for (const auto& [assignment, guess] : cases) {
    const auto message = error_of({{}, {assignment}, ""});
    EXPECT_NE(message.find("allowed: "), std::string::npos) << message;
    EXPECT_NE(message.find(guess + "\n  fix: "), std::string::npos) << assignment << ": " << message;
  }
  const auto unguessable = error_of({{}, {"scheduler.name=linear"}, ""});
  EXPECT_EQ(unguessable.find("did you mean"), std::string::npos) << unguessable;
}

// A value spelt as people write it elsewhere gets the spelling the key takes.
TEST(Config, AValueSpeltAnotherWayGetsTheSpellingTheKeyTakes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.epochs=1,000", "; did you mean '1000'?"},   {"optimizer.betas=(0.9, 0.999)", "; did you mean '[0.9, 0.999]'?"},
      {"device.max_memory=8gb", "; did you mean '8GB'?"}, {"device.max_memory=512 mib", "; did you mean '512MiB'?"},
      {"train.max_time=90min", "; did you mean '90m'?"},  {"train.max_time=2 hours", "; did you mean '2h'?"},
  };
  for (const auto& [assignment, guess] : cases) {
    const auto message = error_of({{}, {assignment}, ""});
    EXPECT_NE(message.find(guess + "\n  fix: "), std::string::npos) << assignment << ": " << message;
  }
  EXPECT_EQ(error_of({{}, {"train.epochs=many"}, ""}).find("did you mean"), std::string::npos);
}

TEST(Config, OutOfRangeNumberIsRejected) {
  EXPECT_NE(error_of({{}, {"model.dropout=1.5"}, ""}).find("<= 0.99"), std::string::npos);
  EXPECT_NE(error_of({{}, {"train.epochs=0"}, ""}).find("an integer >= 1"), std::string::npos);
  EXPECT_NE(error_of({{}, {"optimizer.lr=fast"}, ""}).find("a number >= 0"), std::string::npos);
  // A share above 100 % is an alert that never fires: refused, not taken as off.
  const auto percent = error_of({{}, {"logging.alerts.gpu_memory_percent=1e6"}, ""});
  EXPECT_NE(percent.find("found '1e6'; allowed: a number >= 0 and <= 100, or off"), std::string::npos) << percent;
  EXPECT_NE(error_of({{}, {"logging.alerts.gpu_utilization_percent=101"}, ""}).find("<= 100, or off"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"logging.alerts.gpu_utilization_percent=100"}, ""}).logging.alerts.gpu_utilization_percent, 100.0);
}

TEST(Config, DuplicateKeyIsRejected) {
  const auto message = error_of({{fixture("duplicate_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("duplicate_key.yaml:3:3"), std::string::npos) << message;
  EXPECT_NE(message.find("set twice"), std::string::npos) << message;
}

// Two configs pasted into one file with '---' between them: yaml-cpp's Load read the first and
// dropped the second without a word (epochs: 2 below trained 1 epoch).
TEST(Config, ASecondYamlDocumentIsRefusedNotDropped) {
  const auto message = error_of({{}, {}, "train:\n  epochs: 1\n---\ntrain:\n  epochs: 2\n"});
  EXPECT_NE(message.find(":4:1: a second YAML document, after a '---' line: gputrain reads one per config file"), std::string::npos)
      << message;
  EXPECT_NE(message.find("delete the '---' line"), std::string::npos) << message;
  // A leading '---', or a trailing one with nothing after it, is one document.
  EXPECT_EQ(load_config({{}, {}, "---\ntrain:\n  epochs: 3\n---\n"}).train.epochs, 3);
}

TEST(Config, SectionGivenAValueIsRejected) {
  const auto message = error_of({{fixture("section_as_value.yaml")}, {}, ""});
  EXPECT_NE(message.find("'logging' is a section"), std::string::npos) << message;
}

TEST(Config, InvalidYamlNamesTheLine) {
  const auto message = error_of({{fixture("bad_yaml.yaml")}, {}, ""});
  EXPECT_NE(message.find("bad_yaml.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
}

// A tab where YAML wants spaces is the usual broken file; the parser's own words do not say so.
TEST(Config, ATabIndentIsNamedAsSuch) {
  const auto message = error_of({{fixture("tab_indent.yaml")}, {}, ""});
  EXPECT_NE(message.find("tab_indent.yaml:4:"), std::string::npos) << message;
  EXPECT_NE(message.find("fix: indent with spaces: YAML does not allow tabs, and line 4 starts with one"), std::string::npos) << message;
}

// A key a space off its section's column: yaml-cpp says "end of map not found" or "illegal map
// value"; the fix names the columns the keys above it use.
TEST(Config, AMisalignedKeyIsNamedWithTheColumnsAboveIt) {
  const auto deeper = error_of({{fixture("misaligned_key.yaml")}, {}, ""});
  EXPECT_NE(deeper.find("misaligned_key.yaml:6:"), std::string::npos) << deeper;
  EXPECT_NE(deeper.find("fix: line 6 is indented 3 spaces, but the keys above it are indented 2 (line 3) or 0 (line 2): indent it as "
                        "the other keys of its section"),
            std::string::npos)
      << deeper;
  const auto shallower = error_of({{fixture("dedented_key.yaml")}, {}, ""});
  EXPECT_NE(shallower.find("fix: line 4 is indented 2 spaces, but the keys above it are indented 4 (line 3) or 0 (line 2)"),
            std::string::npos)
      << shallower;
  const auto crlf = std::filesystem::temp_directory_path() / "gputrain-misaligned-crlf.yaml";  // saved on Windows
  std::ofstream(crlf, std::ios::binary) << "train:\r\n  epochs: 3\r\n   batch_size: 4\r\n";
  const auto windows = error_of({{crlf.string()}, {}, ""});
  EXPECT_NE(windows.find("fix: line 3 is indented 3 spaces, but the keys above it are indented 2 (line 2) or 0 (line 1)"),
            std::string::npos)
      << windows;
  std::filesystem::remove(crlf);
  // A list left open names its '[' (other broken YAML keeps the general fix: test_yaml_hints.cpp).
  EXPECT_NE(error_of({{fixture("bad_yaml.yaml")}, {}, ""}).find("fix: the '[' at line 2, column 11 is never closed"), std::string::npos);
}

TEST(Config, MissingFileNamesThePath) {
  const auto message = error_of({{"/no/such/config.yaml"}, {}, ""});
  EXPECT_NE(message.find("'/no/such/config.yaml' does not exist"), std::string::npos) << message;
}

TEST(Config, AMissingFileNamesTheConfigMeantBesideIt) {
  const std::string configs = std::string(gputrain::test_support::source_dir()) + "/configs/";
  const auto message = error_of({{configs + "mlp.yml"}, {}, ""});
  EXPECT_NE(message.find("does not exist (did you mean '" + configs + "mlp.yaml'?)"), std::string::npos) << message;
}

TEST(Config, AFolderGivenAsTheConfigFileIsAnError) {
  const auto folder = std::filesystem::temp_directory_path().string();
  const auto message = error_of({{folder}, {}, ""});
  EXPECT_NE(message.find("'" + folder + "' is a folder"), std::string::npos) << message;
}

TEST(Config, BadOverrides) {
  EXPECT_NE(error_of({{}, {"train.max_steps"}, ""}).find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of({{}, {"train.maxsteps=3"}, ""}).find("did you mean 'train.max_steps'"), std::string::npos);
  EXPECT_NE(error_of({{}, {"train=3"}, ""}).find("is a section"), std::string::npos);
  EXPECT_NE(error_of({{}, {"device=gpu"}, ""}).find("auto, cpu, cuda or cuda:N"), std::string::npos);
  EXPECT_NE(error_of({{}, {"model.name=resnet19"}, ""}).find("resnet18"), std::string::npos);
  EXPECT_NE(error_of({{}, {"model.name=resnet19"}, ""}).find("allowed: one of auto, mlp,"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"model.name=auto"}, ""}).model.name, "auto");
  EXPECT_NE(error_of({{}, {"train.cuda_graphs=yes"}, ""}).find("allowed: one of auto, on, off"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"train.cuda_graphs=off"}, ""}).train.cuda_graphs, "off");
  EXPECT_EQ(load_config({{}, {}, ""}).train.cuda_graphs, "auto");
  // A value YAML reads as nothing though something was written is refused, not taken as unset.
  EXPECT_NE(error_of({{}, {"data.path=#train.csv"}, ""}).find("YAML reads '#train.csv' as no value (# starts a comment)"),
            std::string::npos);
  EXPECT_EQ(load_config({{}, {"data.val_path=null"}, ""}).data.val_path, "");
  EXPECT_EQ(load_config({{}, {"data.val_path="}, ""}).data.val_path, "");
  // A bad element of a list is named by its index.
  EXPECT_NE(error_of({{}, {"model.hidden=[8, x]"}, ""}).find("model.hidden[1]: found 'x'; allowed: an integer >= 1"), std::string::npos);
  EXPECT_NE(error_of({{}, {"data.features=[a, [b]]"}, ""}).find("data.features[1]: found a list; allowed: a name"), std::string::npos);
  EXPECT_NE(error_of({{}, {"data.shape=[]"}, ""}).find("data.shape: found an empty list; allowed: a non-empty list"), std::string::npos);
}

// scheduler.min_lr above a rate it lowers made the cosine schedule raise that rate all run, silently.
TEST(Config, AMinimumRateAboveARateItLowersIsRefused) {
  const auto above = error_of({{}, {"scheduler.name=cosine", "scheduler.min_lr=0.5", "optimizer.lr=0.1"}, ""});
  EXPECT_NE(above.find("scheduler.min_lr 0.5 is above the learning rate it would lower (0.1, optimizer.lr): the cosine schedule would "
                       "raise it all run"),
            std::string::npos)
      << above;
  const auto group = error_of(
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
    const auto message = error_of({{}, sets, ""});
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
    const auto message = error_of({{}, {key + "=1e300"}, ""});
    EXPECT_NE(message.find(key + ": found '1e300'; allowed: a number >= 0 and <= 3.4e+38"), std::string::npos) << message;
  }
  EXPECT_NE(error_of({{}, {"data.std=[1e300]"}, ""}).find("data.std[0]: found '1e300'"), std::string::npos);
  EXPECT_NE(error_of({{}, {"optimizer.param_groups=[{params: [fc], lr: 1e39}]"}, ""}).find("allowed: a number >= 0 and <= 3.4e+38"),
            std::string::npos);
  const auto decay = error_of({{}, {"optimizer.name=adamw", "optimizer.lr=0.01", "optimizer.weight_decay=100"}, ""});
  EXPECT_NE(decay.find("the weight decay 100 at learning rate 0.01 takes lr x weight_decay = 1 of every weight each step (1 or more)"),
            std::string::npos)
      << decay;
  EXPECT_NE(decay.find("(AdamW's usual: 0.01 to 0.1)"), std::string::npos) << decay;
  const auto group = error_of({{}, {"optimizer.name=sgd", "optimizer.param_groups=[{params: [fc], lr: 0.5, weight_decay: 4}]"}, ""});
  EXPECT_NE(group.find("optimizer.param_groups[0]'s weight decay 4 at learning rate 0.5 takes lr x weight_decay = 2"), std::string::npos)
      << group;
  EXPECT_EQ(load_config({{}, {"optimizer.name=adam", "optimizer.lr=0.01", "optimizer.weight_decay=100"}, ""}).optimizer.weight_decay, 100);
  EXPECT_EQ(load_config({{}, {"optimizer.name=adamw", "optimizer.lr=0.001", "optimizer.weight_decay=0.1"}, ""}).optimizer.weight_decay,
            0.1);
}

// A user fixing a config should meet all its mistakes in one run, each where it is, with its fix.
TEST(Config, EveryMistakeIsReportedAtOnce) {
  const auto message = error_of({{fixture("three_mistakes.yaml")}, {"train.batch_size=0"}, ""});
  EXPECT_EQ(message.rfind("4 problems in the config:\n", 0), 0U) << message;
  std::size_t at = 0;
  for (const std::string expected : {"/three_mistakes.yaml:3:11: model.hidden: found '512'", "\n    fix: set model.hidden to a list",
                                     "/three_mistakes.yaml:5:11: train.epochs: found 'three'",
                                     "/three_mistakes.yaml:6:3: unknown key 'train.lr'; did you mean 'optimizer.lr'?",
                                     "\n  --set train.batch_size=0: train.batch_size: found '0'", "\n  fix: fix all 4, then run again"}) {
    const auto found = message.find(expected, at);
    EXPECT_NE(found, std::string::npos) << "missing or out of order: " << expected << "\n" << message;
    if (found != std::string::npos) at = found;
  }
}

// A file of thousands of mistakes (20,000 unknown keys wrote 9 MB) lists the first twenty.
TEST(Config, ManyMistakesListTheFirstTwenty) {
  std::vector<std::string> sets;
  for (int i = 0; i < 25; ++i) sets.push_back("train.k" + std::to_string(i) + "=1");
  const auto message = error_of({{}, sets, ""});
  EXPECT_EQ(message.rfind("25 problems in the config:\n", 0), 0U) << message;
  EXPECT_NE(message.find("unknown key 'train.k19'"), std::string::npos) << message;
  EXPECT_EQ(message.find("unknown key 'train.k20'"), std::string::npos) << message;
  EXPECT_NE(message.find("\n  ... and 5 more\n  fix: fix all 25 (the first 20 are above), then run again"), std::string::npos) << message;
}

TEST(Config, InconsistentKeysAreRejected) {
  EXPECT_NE(error_of({{}, {"data.task=regression", "checkpoint.best_metric=val_accuracy"}, ""}).find("needs data.task classification"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"model.name=transformer", "data.shape=[8, 4]", "model.heads=3"}, ""}).find("multiple of model.heads"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"data.standardize=true", "data.mean=[0.5]", "data.std=[0.2]"}, ""}).find("data.standardize measures"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"data.standardize_targets=true"}, ""})
                .find("data.standardize_targets scales regression targets, but data.task is classification"),
            std::string::npos);
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
    return error_of({{}, settings, ""});
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
  EXPECT_NE(error_of({{}, {"train.epochs=2.5"}, ""}).find("train.epochs: found '2.5'; allowed: an integer >= 1"), std::string::npos);
  EXPECT_NE(error_of({{}, {"train.max_steps=1e400"}, ""}).find("found '1e400'"), std::string::npos);
  EXPECT_NE(error_of({{}, {"train.epochs=ten"}, ""}).find("found 'ten'"), std::string::npos);
}

// A boolean as YAML writes one: true/True/TRUE (1.2), yes/on and their cases (1.1, as PyYAML).
TEST(Config, BooleansTakeYamlsSpellings) {
  for (const std::string yes : {"true", "True", "TRUE", "yes", "Yes", "on", "ON"})
    EXPECT_TRUE(load_config({{}, {"train.deterministic=" + yes}, ""}).train.deterministic) << yes;
  for (const std::string no : {"false", "False", "FALSE", "no", "No", "off", "OFF"})
    EXPECT_FALSE(load_config({{}, {"train.deterministic=true", "train.deterministic=" + no}, ""}).train.deterministic) << no;
  EXPECT_NE(error_of({{}, {"train.deterministic=1"}, ""}).find("train.deterministic: found '1'; allowed: true or false"),
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
  EXPECT_NE(error_of({{}, {}, "x-lr: &lr 0.01\noptimizer:\n  <<: *lr\n"})
                .find("'optimizer.<<' merges mappings into this one, and it is given something else"),
            std::string::npos);
  // A merged key is not a key set twice; one written twice still is.
  EXPECT_NE(error_of({{}, {}, "train:\n  epochs: 2\n  epochs: 3\n  <<: {seed: 1}\n"}).find("'train.epochs' is set twice"),
            std::string::npos);
  // A holder without the prefix is an unknown key, whose fix names the prefix.
  const auto holder = error_of({{}, {}, "defaults: &d\n  lr: 0.1\noptimizer:\n  <<: *d\n"});
  EXPECT_NE(holder.find("unknown key 'defaults'"), std::string::npos) << holder;
  EXPECT_NE(holder.find("starts with x-, as x-defaults"), std::string::npos) << holder;
  EXPECT_EQ(error_of({{}, {}, "trian:\n  epochs: 1\n"}).find("x-"), std::string::npos) << "a misspelt section gets its guess alone";
  // Hydra's defaults is a list of configs to compose: gputrain's way is files in order.
  EXPECT_NE(error_of({{}, {}, "defaults:\n  - base\ntrain:\n  epochs: 1\n"}).find("gputrain from files given in order"), std::string::npos);
}

TEST(Config, PrintedConfigLoadsBackToTheSameConfig) {
  const auto original = load_config({{fixture("base.yaml")}, {"optimizer.lr=0.001", "train.batch_size=auto", "scheduler.gamma=0.3"}, ""});
  const auto text = train::to_yaml(original);
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-printed-config.yaml").string();
  std::ofstream(path) << text;
  const auto reloaded = load_config({{path}, {}, ""});
  EXPECT_EQ(train::to_yaml(reloaded), text);
  EXPECT_NE(text.find("lr: 0.001\n"), std::string::npos) << text;
  EXPECT_NE(text.find("batch_size: auto\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hidden: [32]\n"), std::string::npos) << text;
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
  EXPECT_NE(
      error_of({{}, {"data.labels={a: 1}"}, ""}).find("allowed: a file (npy), key (npz, safetensors), or column or list of columns (csv)"),
      std::string::npos);
}

// One integer is a square, as torchvision's transforms take a size; a list is [height, width].
TEST(Config, DataImageSizeIsASquareOrHeightAndWidth) {
  EXPECT_EQ(load_config({{}, {"data.image_size=32"}, ""}).data.image_size, (std::vector<std::int64_t>{32, 32}));
  const auto both = load_config({{}, {"data.image_size=[32, 48]"}, ""});
  EXPECT_EQ(both.data.image_size, (std::vector<std::int64_t>{32, 48}));
  EXPECT_NE(train::to_yaml(both).find("  image_size: [32, 48]\n"), std::string::npos) << train::to_yaml(both);
  EXPECT_NE(error_of({{}, {"data.image_size=[32]"}, ""}).find("allowed: [height, width], e.g. [224, 224], or one integer for a square"),
            std::string::npos);
  for (const char* bad :
       {"data.image_size=0", "data.image_size=big", "data.image_size=3.5", "data.image_size=100000", "data.image_size=[64, 9000]"})
    EXPECT_NE(error_of({{}, {bad}, ""}).find("or one integer for a square, each side from 1 to 8192 (tile larger images)"),
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
  const auto bare = error_of({{}, {"train.max_time=30"}, ""});
  EXPECT_NE(bare.find("train.max_time: found '30'; allowed: a duration such as 45m, 2h, 1h30m, 1d or 11:30:00 (H:MM:SS), or none"),
            std::string::npos)
      << bare;
  EXPECT_NE(bare.find("a number alone has no unit: write 30m or 30s"), std::string::npos) << bare;
  const auto wrong = error_of({{}, {"train.max_time=2 hours"}, ""});
  EXPECT_NE(wrong.find("found '2 hours'"), std::string::npos) << wrong;
  EXPECT_EQ(wrong.find("no unit"), std::string::npos) << "the hint is for a bare number only: " << wrong;
}

// A resumed run names what changed since its checkpoint.
TEST(Config, DifferencesNameEachChangedKeyWithBothValues) {
  const auto before = train::to_yaml(load_config({{}, {"train.epochs=3", "data.shape=[8]"}, ""}));
  const auto after = train::to_yaml(load_config({{}, {"train.epochs=5", "data.shape=[8, 2]", "optimizer.lr=0.1"}, ""}));
  EXPECT_EQ(train::config_differences(before, after),
            (std::vector<std::string>{"data.shape [8] -> [8, 2]", "train.epochs 3 -> 5", "optimizer.lr 0.001 -> 0.1"}));
  EXPECT_TRUE(train::config_differences(before, before).empty());
  // A checkpoint from a version without a key (or a section) differs in nothing it lacks.
  EXPECT_EQ(train::config_differences("train:\n  epochs: 3\n", after), (std::vector<std::string>{"train.epochs 3 -> 5"}));
}

// Numbers print as people write them, and read back exactly.
TEST(Config, PrintedNumbersAreShortAndPlain) {
  const auto config = load_config(
      {{},
       {"distributed.timeout=300", "data.timeout=120.5", "optimizer.eps=1e-08", "optimizer.lr=3e-4", "optimizer.weight_decay=0.1"},
       ""});
  const auto text = train::to_yaml(config);
  for (const char* line : {"timeout: 300\n", "timeout: 120.5\n", "eps: 1e-08\n", "lr: 0.0003\n", "weight_decay: 0.1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
}

// docs/configuration.md documents exactly the keys the schema has: a row "| `key` | ..." each.
TEST(Config, EveryKeyIsDocumentedAndEveryDocumentedKeyExists) {
  std::ifstream doc(std::string(gputrain::test_support::source_dir()) + "/docs/configuration.md");
  ASSERT_TRUE(doc) << "docs/configuration.md is missing";
  std::set<std::string> documented;
  const std::regex row("^\\| `([a-z0-9_.]+)` \\|");
  for (std::string line; std::getline(doc, line);) {
    std::smatch match;
    if (std::regex_search(line, match, row)) documented.insert(match[1]);
  }
  const auto keys = train::config_keys();
  const std::set<std::string> in_code(keys.begin(), keys.end());
  for (const auto& key : in_code) EXPECT_TRUE(documented.count(key)) << key << " is in the schema but not in docs/configuration.md";
  for (const auto& key : documented) EXPECT_TRUE(in_code.count(key)) << key << " is in docs/configuration.md but not in the schema";
}

// Paths are taken from the current folder; a config's relative path that is missing here but
// sits next to the config file is named at its line with both fixes, before any data is opened.
TEST(Config, ARelativePathFoundOnlyNextToTheConfigFileIsNamedWithBothFixes) {
  test_support::ScratchFolder folder("config-paths");
  const auto config = folder.path / "cfg.yaml";
  std::ofstream(config) << "data:\n  path: beside.csv\n  labels: [beside_labels.npy]\n  source: npy\n";
  std::ofstream(folder.path / "beside.csv") << "a,y\n1,0\n";
  std::ofstream(folder.path / "beside_labels.npy") << "";
  ASSERT_FALSE(std::filesystem::exists("beside.csv"));
  const auto error = error_of({{config.string()}, {}, ""});
  EXPECT_NE(
      error.find(config.string() + ":2:9: data.path 'beside.csv' is not in the current folder (" +
                 std::filesystem::current_path().string() + "), but is next to the config file: " + (folder.path / "beside.csv").string()),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("write data.path: " + (folder.path / "beside.csv").string() + " (or an absolute path), or run gputrain from " +
                       folder.path.string()),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("2 problems in the config"), std::string::npos) << "the labels' path too: " << error;
  // --set replaces the file's value, so the file's path is not checked; a list's paths are.
  const auto labels = error_of({{config.string()}, {"data.path=/elsewhere/data.csv"}, ""});
  EXPECT_NE(labels.find(":3:11: data.labels 'beside_labels.npy' is not in the current folder"), std::string::npos) << labels;
  EXPECT_NO_THROW(load_config({{config.string()}, {"data.path=/elsewhere/data.csv", "data.labels=[y]"}, ""}));
  // Missing here and there: opening the data says so, as for any missing file.
  std::ofstream(config) << "data:\n  path: nowhere.csv\n  source: csv\n";
  EXPECT_NO_THROW(load_config({{config.string()}, {}, ""}));
  // A pattern of CSV parts is found beside the config by what it matches.
  std::ofstream(config) << "data:\n  path: beside*.csv\n  source: csv\n";
  EXPECT_NE(error_of({{config.string()}, {}, ""}).find("data.path 'beside*.csv' is not in the current folder"), std::string::npos);
}

// A YAML file, and a --set the shell leaves alone (`--set data.path=~/x` is not an assignment to
// it), reach gputrain with `~` and variables unexpanded: path keys expand them as a shell would,
// and the config saved with the run records the paths it read.
TEST(Config, PathsExpandTildeAndEnvironmentVariables) {
  ::setenv("GPUTRAIN_TEST_DATA_DIR", "/srv/data", 1);
  ::unsetenv("GPUTRAIN_TEST_UNSET");
  const std::string home = std::getenv("HOME");
  const auto c = load_config({{},
                              {"data.source=csv", "data.path=~/people.csv", "data.val_path=${GPUTRAIN_TEST_DATA_DIR}/val.csv",
                               "logging.dir=$GPUTRAIN_TEST_DATA_DIR/runs/a", "checkpoint.dir=~/ckpt", "model.init_weights=w$1.safetensors",
                               "data.labels=price$usd"},
                              ""});
  EXPECT_EQ(c.data.path, home + "/people.csv");
  EXPECT_EQ(c.data.val_path, "/srv/data/val.csv");
  EXPECT_EQ(c.logging.dir, "/srv/data/runs/a");
  EXPECT_EQ(c.checkpoint.dir, home + "/ckpt");
  EXPECT_EQ(c.model.init_weights, "w$1.safetensors");                 // no name after '$': as written
  EXPECT_EQ(c.data.labels, (std::vector<std::string>{"price$usd"}));  // a column's name, not a path

  gputrain::test_support::ScratchFolder folder("config-env");
  const auto file = (folder.path / "run.yaml").string();
  std::ofstream(file) << "data:\n  source: csv\n  path: ${GPUTRAIN_TEST_UNSET}/x.csv\n";
  EXPECT_EQ(error_of({{file}, {}, ""}),
            file +
                ":3:9: data.path '${GPUTRAIN_TEST_UNSET}/x.csv' names $GPUTRAIN_TEST_UNSET, which is not set in "
                "this environment\n  fix: set it (export GPUTRAIN_TEST_UNSET=...) before running "
                "gputrain, or write the path out");
  // OmegaConf's interpolation is no variable: a folder named "${oc.env:HOME}" would be made.
  EXPECT_NE(error_of({{}, {"logging.dir=${oc.env:HOME}/runs"}, ""})
                .find("logging.dir '${oc.env:HOME}/runs' holds '${oc.env:HOME}', an interpolation of OmegaConf's or Hydra's"),
            std::string::npos);
  EXPECT_NE(error_of({{}, {"scheduler.warmup_steps=${train.epochs}"}, ""}).find("gputrain does not resolve: write the value"),
            std::string::npos);
  ::unsetenv("GPUTRAIN_TEST_DATA_DIR");
}

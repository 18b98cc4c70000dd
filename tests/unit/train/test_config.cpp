// Loading a config: files layered in order, --set and the flags over them, paths found beside the
// config or expanded, printed configs that load back, and every documented key that exists.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/config_errors.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using test_support::config_error;
using test_support::config_fixture;
using train::ConfigSources;
using train::load_config;

TEST(Config, DefaultsAreValid) {
  const auto c = load_config({});
  EXPECT_EQ(c.model.name, "auto");  // chosen by the data's sample shape (open_data)
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.train.precision, train::Precision::fp32);
  EXPECT_EQ(c.device.name, "auto");
  EXPECT_EQ(c.checkpoint_dir(), "runs/default/checkpoints");
}

TEST(Config, LaterFilesOverrideEarlierOnesAndSetOverridesFiles) {
  const auto one = load_config({{config_fixture("base.yaml")}, {}, ""});
  EXPECT_EQ(one.model.name, "mlp");
  EXPECT_EQ(one.model.hidden, std::vector<std::int64_t>{32});
  EXPECT_EQ(one.train.batch_size, 16);
  EXPECT_EQ(one.optimizer.name, "adamw");
  const auto two = load_config({{config_fixture("base.yaml"), config_fixture("override.yaml")}, {}, ""});
  EXPECT_EQ(two.train.batch_size, 8);
  EXPECT_EQ(two.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(two.optimizer.lr, 0.01);  // kept from base.yaml
  const auto three = load_config({{config_fixture("base.yaml"), config_fixture("override.yaml")},
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
  EXPECT_NE(config_error({{}, {"logging.dir="}, ""}).find("logging.dir: found no value; allowed: a directory path"), std::string::npos);
}

// Synthetic data reads no files: a path set with it was meant for a file source, and training on
// generated samples instead would look like success.
TEST(Config, APathWithSyntheticDataIsAnErrorThatNamesTheSourceItLooksLike) {
  test_support::ScratchFolder folder("config-synthetic-path");
  const auto npy = (folder.path / "features.npy").string();
  std::ofstream(npy) << "x";
  const auto with_npy = config_error({{}, {"data.source=synthetic", "data.path=" + npy, "data.labels=y.npy"}, ""});
  EXPECT_NE(with_npy.find("data.path is set ('" + npy + "'), but data.source is synthetic"), std::string::npos) << with_npy;
  EXPECT_NE(with_npy.find("fix: set data.source: npy (" + npy + " looks like npy data), or remove data.path"), std::string::npos)
      << with_npy;
  const auto unknown = config_error({{}, {"data.val_path=val.bin"}, ""});
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
    const auto error = config_error({{at(name)}, {}, ""});
    EXPECT_NE(error.find("config file '" + at(name) + "' sets nothing: empty, or comments only"), std::string::npos) << error;
    EXPECT_NE(error.find("configs/quickstart.yaml"), std::string::npos) << error;
  }
  EXPECT_NE(config_error({{at("empty.yaml"), at("comments.yaml")}, {}, ""}).find("the config files (" + at("empty.yaml") + ", "),
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

  const auto unknown = config_error({{}, {"data.path=" + at("weights.bin")}, ""});
  EXPECT_NE(unknown.find("--set data.path=" + at("weights.bin") + ": cannot tell the format of '" + at("weights.bin") +
                         "' from its name or contents, and data.source is not set"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("fix: set data.source to its format (npy, npz, safetensors, csv, mnist, cifar10, image_folder)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(config_error({{}, {"data.path=" + at("empty")}, ""}).find("cannot tell the format of"), std::string::npos);
  // Delimited text under another name (Excel's "Text (Tab delimited)" is a .txt): the source that reads it.
  std::ofstream(at("export.txt")) << "a\tb\tlabel\r\n1\t2\t0\r\n";
  const auto text = config_error({{}, {"data.path=" + at("export.txt")}, ""});
  EXPECT_NE(text.find("from its name, and data.source is not set: it reads as tab-separated text, its first row a, b, label\n"
                      "  fix: set data.source: csv"),
            std::string::npos)
      << text;
  // A format gputrain does not read is named, with the command that writes one it does.
  for (const auto& [name, what, fix] : std::vector<std::array<std::string, 3>>{
           {"sales.parquet", "is a Parquet file, which gputrain does not read", "p.read_parquet('" + at("sales.parquet") + "').to_csv("},
           {"tensors.pt", "is a torch.save file (a pickle), which gputrain does not read",
            "save_file({'x': x, 'y': y}, 'data.safetensors')"},
           {"data.h5", "is an HDF5 file, which gputrain does not read", "n.savez('data.npz'"},
           // A compressed CSV other than gzip's: the command that decompresses it, not "set data.source".
           {"rows.csv.bz2", "is bzip2-compressed, which gputrain does not read",
            "decompress it (bunzip2 -k " + at("rows.csv.bz2") + ") and set data.path: " + at("rows.csv")},
           {"rows.csv.zst", "is zstd-compressed, which gputrain does not read", "zstd -d"}}) {
    std::ofstream(at(name)) << "x";
    const auto message = config_error({{}, {"data.path=" + at(name)}, ""});
    EXPECT_NE(message.find("data.path '" + at(name) + "' " + what), std::string::npos) << message;
    EXPECT_NE(message.find(fix), std::string::npos) << message;
  }
  const auto in_file = at("typo.yaml");
  std::ofstream(in_file) << "data:\n  path: " << at("x.cs") << "\n";
  const auto missing = config_error({{in_file}, {}, ""});
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
  const auto message = config_error({{yaml}, {}, ""});
  EXPECT_NE(message.find("nul.yaml:4"), std::string::npos) << message;
  EXPECT_NE(message.find("data.query: holds a NUL character (\\0) at position 23 of 39"), std::string::npos) << message;
  EXPECT_NE(config_error({{}, {"data.features=[a, \"b\\0c\"]"}, ""}).find("data.features[1]: holds a NUL character"), std::string::npos);
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
  const auto error = config_error(bad);
  EXPECT_NE(error.find("--max-memory lots: device.max_memory: found 'lots'"), std::string::npos)
      << "the error names the flag, not --set: " << error;
}

TEST(Config, EmbeddedConfigIsOverriddenByFiles) {
  const auto c = load_config({{config_fixture("override.yaml")}, {}, "train:\n  batch_size: 99\n  epochs: 7\n"});
  EXPECT_EQ(c.train.batch_size, 8);
  EXPECT_EQ(c.train.epochs, 7);
}

TEST(Config, MissingFileNamesThePath) {
  const auto message = config_error({{"/no/such/config.yaml"}, {}, ""});
  EXPECT_NE(message.find("'/no/such/config.yaml' does not exist"), std::string::npos) << message;
}

TEST(Config, AMissingFileNamesTheConfigMeantBesideIt) {
  const std::string configs = std::string(gputrain::test_support::source_dir()) + "/configs/";
  const auto message = config_error({{configs + "mlp.yml"}, {}, ""});
  EXPECT_NE(message.find("does not exist (did you mean '" + configs + "mlp.yaml'?)"), std::string::npos) << message;
}

// The fix names the configs the folder holds: a run folder's config.yaml, configs/'s files.
TEST(Config, AFolderGivenAsTheConfigFileIsAnErrorNamingTheConfigsInIt) {
  const auto folder = (std::filesystem::temp_directory_path() / "gputrain-config-folder").string();
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  auto message = config_error({{folder}, {}, ""});
  EXPECT_NE(message.find("'" + folder + "' is a folder"), std::string::npos) << message;
  EXPECT_NE(message.find("name a YAML file, e.g. " + folder + "/train.yaml"), std::string::npos) << message;
  const std::string configs = std::string(gputrain::test_support::source_dir()) + "/configs";
  message = config_error({{configs}, {}, ""});
  EXPECT_NE(message.find("name one of its YAML files: " + configs + "/cifar10.yaml, "), std::string::npos) << message;
  std::ofstream(folder + "/config.yaml") << "train:\n  epochs: 1\n";
  message = config_error({{folder}, {}, ""});
  EXPECT_NE(message.find("name the config in it: gputrain train " + folder + "/config.yaml"), std::string::npos) << message;
}

TEST(Config, BadOverrides) {
  EXPECT_NE(config_error({{}, {"train.max_steps"}, ""}).find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(config_error({{}, {"train.maxsteps=3"}, ""}).find("did you mean 'train.max_steps'"), std::string::npos);
  EXPECT_NE(config_error({{}, {"train=3"}, ""}).find("is a section"), std::string::npos);
  EXPECT_NE(config_error({{}, {"device=gpu"}, ""}).find("auto, cpu, cuda or cuda:N"), std::string::npos);
  EXPECT_NE(config_error({{}, {"model.name=resnet19"}, ""}).find("resnet18"), std::string::npos);
  EXPECT_NE(config_error({{}, {"model.name=resnet19"}, ""}).find("allowed: one of auto, mlp,"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"model.name=auto"}, ""}).model.name, "auto");
  EXPECT_NE(config_error({{}, {"train.cuda_graphs=yes"}, ""}).find("allowed: one of auto, on, off"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"train.cuda_graphs=off"}, ""}).train.cuda_graphs, "off");
  EXPECT_EQ(load_config({{}, {}, ""}).train.cuda_graphs, "auto");
  // A value YAML reads as nothing though something was written is refused, not taken as unset.
  EXPECT_NE(config_error({{}, {"data.path=#train.csv"}, ""}).find("YAML reads '#train.csv' as no value (# starts a comment)"),
            std::string::npos);
  EXPECT_EQ(load_config({{}, {"data.val_path=null"}, ""}).data.val_path, "");
  EXPECT_EQ(load_config({{}, {"data.val_path="}, ""}).data.val_path, "");
  // A bad element of a list is named by its index.
  EXPECT_NE(config_error({{}, {"model.hidden=[8, x]"}, ""}).find("model.hidden[1]: found 'x'; allowed: an integer >= 1"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.features=[a, [b]]"}, ""}).find("data.features[1]: found a list; allowed: a name"), std::string::npos);
  EXPECT_NE(config_error({{}, {"data.shape=[]"}, ""}).find("data.shape: found an empty list; allowed: a non-empty list"),
            std::string::npos);
}

TEST(Config, PrintedConfigLoadsBackToTheSameConfig) {
  const auto original =
      load_config({{config_fixture("base.yaml")}, {"optimizer.lr=0.001", "train.batch_size=auto", "scheduler.gamma=0.3"}, ""});
  const auto text = train::to_yaml(original);
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-printed-config.yaml").string();
  std::ofstream(path) << text;
  const auto reloaded = load_config({{path}, {}, ""});
  EXPECT_EQ(train::to_yaml(reloaded), text);
  EXPECT_NE(text.find("lr: 0.001\n"), std::string::npos) << text;
  EXPECT_NE(text.find("batch_size: auto\n"), std::string::npos) << text;
  EXPECT_NE(text.find("hidden: [32]\n"), std::string::npos) << text;
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
  const auto error = config_error({{config.string()}, {}, ""});
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
  const auto labels = config_error({{config.string()}, {"data.path=/elsewhere/data.csv"}, ""});
  EXPECT_NE(labels.find(":3:11: data.labels 'beside_labels.npy' is not in the current folder"), std::string::npos) << labels;
  EXPECT_NO_THROW(load_config({{config.string()}, {"data.path=/elsewhere/data.csv", "data.labels=[y]"}, ""}));
  // Missing here and there: opening the data says so, as for any missing file.
  std::ofstream(config) << "data:\n  path: nowhere.csv\n  source: csv\n";
  EXPECT_NO_THROW(load_config({{config.string()}, {}, ""}));
  // A pattern of CSV parts is found beside the config by what it matches.
  std::ofstream(config) << "data:\n  path: beside*.csv\n  source: csv\n";
  EXPECT_NE(config_error({{config.string()}, {}, ""}).find("data.path 'beside*.csv' is not in the current folder"), std::string::npos);
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
  EXPECT_EQ(config_error({{file}, {}, ""}),
            file +
                ":3:9: data.path '${GPUTRAIN_TEST_UNSET}/x.csv' names $GPUTRAIN_TEST_UNSET, which is not set in "
                "this environment\n  fix: set it (export GPUTRAIN_TEST_UNSET=...) before running "
                "gputrain, or write the path out");
  // OmegaConf's interpolation is no variable: a folder named "${oc.env:HOME}" would be made.
  EXPECT_NE(config_error({{}, {"logging.dir=${oc.env:HOME}/runs"}, ""})
                .find("logging.dir '${oc.env:HOME}/runs' holds '${oc.env:HOME}', an interpolation of OmegaConf's or Hydra's"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"scheduler.warmup_steps=${train.epochs}"}, ""}).find("gputrain does not resolve: write the value"),
            std::string::npos);
  ::unsetenv("GPUTRAIN_TEST_DATA_DIR");
}

// A config that does not load names the file, line and column, what was found and what is allowed:
// YAML mistakes, unknown and misspelt keys and sections, values out of range, many mistakes at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/config_errors.hpp"
#include "support/scratch_folder.hpp"

using namespace gputrain;
using test_support::config_error;
using test_support::config_fixture;
using train::load_config;

TEST(Config, BadValueNamesFileLineColumnFoundAndAllowed) {
  const auto message = config_error({{config_fixture("bad_precision.yaml")}, {}, ""});
  EXPECT_NE(message.find("bad_precision.yaml:5:14"), std::string::npos) << message;
  EXPECT_NE(message.find("train.precision"), std::string::npos) << message;
  EXPECT_NE(message.find("'fp61'"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32, fp16-mixed, bf16-mixed"), std::string::npos) << message;
}

TEST(Config, UnknownKeyInWrongSectionSuggestsTheRightOne) {
  const auto message = config_error({{config_fixture("unknown_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("unknown_key.yaml:3:3"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'optimizer.lr'"), std::string::npos) << message;
}

TEST(Config, MisspelledKeySuggestsTheClosest) {
  const auto message = config_error({{config_fixture("typo_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("did you mean 'train.epochs'"), std::string::npos) << message;
}

// Users bring other tools' names along; those whose meaning is the same here are translated.
TEST(Config, AnotherToolsNameForAKeyIsTranslated) {
  EXPECT_NE(config_error({{}, {"max_epochs=3"}, ""}).find("unknown key 'max_epochs'; Lightning's max_epochs is train.epochs here"),
            std::string::npos);
  EXPECT_NE(
      config_error({{}, {"train.fp16=true"}, ""}).find("unknown key 'train.fp16'; Hugging Face's fp16 is train.precision: fp16-mixed here"),
      std::string::npos);
  EXPECT_NE(config_error({{}, {"output_dir=runs/x"}, ""}).find("Hugging Face's output_dir is logging.dir here"), std::string::npos);
  EXPECT_NE(
      config_error({{}, {"label_smoothing_factor=0.1"}, ""}).find("Hugging Face's label_smoothing_factor is train.label_smoothing here"),
      std::string::npos);
  EXPECT_NE(config_error({{}, {"train.patience=5"}, ""}).find("Lightning's EarlyStopping's patience is train.early_stop_patience here"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"train.class_weight=balanced"}, ""}).find("scikit-learn's class_weight is train.class_weights here"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"train.mixed_precision=bf16"}, ""})
                .find("Accelerate's mixed_precision is train.precision (bf16-mixed, fp16-mixed) here"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"train.grad_clip=1.0"}, ""}).find("nanoGPT's grad_clip is train.clip_grad_norm here"), std::string::npos);
}

// A section indented under another section is pointed to where it belongs.
TEST(Config, ASectionWrittenInsideAnotherIsPointedToItsPlace) {
  EXPECT_NE(config_error({{}, {"train.scheduler=cosine"}, ""})
                .find("unknown key 'train.scheduler'; scheduler is a section of its own: did you mean 'scheduler.name'?"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"train.device=cpu"}, ""})
                .find("unknown key 'train.device'; device is a section of its own: did you mean 'device.name'?"),
            std::string::npos);
  EXPECT_NE(
      config_error({{}, {"train.logging=x"}, ""}).find("unknown key 'train.logging'; logging is a section of its own, at the top level"),
      std::string::npos);
  EXPECT_NE(config_error({{}, {"train.lr_scheduler=cosine"}, ""}).find("Lightning's lr_scheduler is scheduler.name here"),
            std::string::npos);
}

TEST(Config, MisspelledSectionSuggestsTheSection) {
  const auto message = config_error({{config_fixture("typo_section.yaml")}, {}, ""});
  EXPECT_NE(message.find("typo_section.yaml:3:1"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key 'trian'; did you mean 'train'?"), std::string::npos) << message;
  EXPECT_NE(message.find("the top-level sections are: model, data, train"), std::string::npos) << message;
}

TEST(Config, UnknownKeyInAKnownSectionListsThatSectionsKeys) {
  const auto message = config_error({{}, {"data.kind=npy"}, ""});
  EXPECT_NE(message.find("unknown key 'data.kind'"), std::string::npos) << message;
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message;  // nothing in data is close to 'kind'
  EXPECT_NE(message.find("the keys of data are: source, task, path"), std::string::npos) << message;
}

TEST(Config, WrongTypeSaysWhatIsAllowed) {
  const auto message = config_error({{config_fixture("wrong_type.yaml")}, {}, ""});
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
    const auto message = config_error({{}, {assignment}, ""});
    EXPECT_NE(message.find("allowed: "), std::string::npos) << message;
    EXPECT_NE(message.find(guess + "\n  fix: "), std::string::npos) << assignment << ": " << message;
  }
  const auto unguessable = config_error({{}, {"scheduler.name=linear"}, ""});
  EXPECT_EQ(unguessable.find("did you mean"), std::string::npos) << unguessable;
}

// A value spelt as people write it elsewhere gets the spelling the key takes.
TEST(Config, AValueSpeltAnotherWayGetsTheSpellingTheKeyTakes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.epochs=1,000", "; did you mean '1000'?"},
      {"optimizer.betas=(0.9, 0.999)", "; did you mean '[0.9, 0.999]'?"},
      {"device.max_memory=8gb", "; did you mean '8GB'?"},
      {"device.max_memory=512 mib", "; did you mean '512MiB'?"},
      {"train.max_time=90min", "; did you mean '90m'?"},
      {"train.max_time=2 hours", "; did you mean '2h'?"},
      // A decimal comma, and digits grouped by points, as much of Europe writes them: 0,001 was
      // taken for thousands ('0001', a learning rate of 1), and 1.000 read as 1 without a word.
      {"optimizer.lr=0,001", "; did you mean '0.001'? (a decimal point, not a comma)"},
      {"optimizer.weight_decay=0,05", "; did you mean '0.05'? (a decimal point, not a comma)"},
      {"device.max_memory=1,5GB", "; did you mean '1.5GB'?"},
      {"device.max_memory=8 Go", "; did you mean '8GB'?"},
      {"train.max_time=1,5h", "; did you mean '1.5h'?"},
      {"data.val_fraction=10%", "; did you mean '0.1'? (a fraction, not a percentage)"},
      {"logging.alerts.gpu_memory_percent=95%", "; did you mean '95'?"},
      {"optimizer.lr=1e\xE2\x80\x93"
       "3",
       "; did you mean '1e-3'? (a dash where a minus belongs)"},
      {"data.mean=[\xE2\x88\x92"
       "0.5]",
       "; did you mean '-0.5'? (a dash where a minus belongs)"},
      {"train.batch_size=1.000", "; did you mean '1000'? ('1.000' is 1 with a decimal point; write whole numbers without a separator)"},
      {"train.epochs=1.000.000", "; did you mean '1000000'? (write whole numbers without a separator)"},
  };
  for (const auto& [assignment, guess] : cases) {
    const auto message = config_error({{}, {assignment}, ""});
    EXPECT_NE(message.find(guess + "\n  fix: "), std::string::npos) << assignment << ": " << message;
  }
  EXPECT_EQ(config_error({{}, {"train.epochs=many"}, ""}).find("did you mean"), std::string::npos);
}

TEST(Config, OutOfRangeNumberIsRejected) {
  EXPECT_NE(config_error({{}, {"model.dropout=1.5"}, ""}).find("<= 0.99"), std::string::npos);
  EXPECT_NE(config_error({{}, {"train.epochs=0"}, ""}).find("an integer >= 1"), std::string::npos);
  EXPECT_NE(config_error({{}, {"optimizer.lr=fast"}, ""}).find("a number >= 0"), std::string::npos);
  // A share above 100 % is an alert that never fires: refused, not taken as off.
  const auto percent = config_error({{}, {"logging.alerts.gpu_memory_percent=1e6"}, ""});
  EXPECT_NE(percent.find("found '1e6'; allowed: a number >= 0 and <= 100, or off"), std::string::npos) << percent;
  EXPECT_NE(config_error({{}, {"logging.alerts.gpu_utilization_percent=101"}, ""}).find("<= 100, or off"), std::string::npos);
  EXPECT_EQ(load_config({{}, {"logging.alerts.gpu_utilization_percent=100"}, ""}).logging.alerts.gpu_utilization_percent, 100.0);
}

TEST(Config, DuplicateKeyIsRejected) {
  const auto message = config_error({{config_fixture("duplicate_key.yaml")}, {}, ""});
  EXPECT_NE(message.find("duplicate_key.yaml:3:3"), std::string::npos) << message;
  EXPECT_NE(message.find("set twice"), std::string::npos) << message;
}

// Two configs pasted into one file with '---' between them: yaml-cpp's Load read the first and
// dropped the second without a word (epochs: 2 below trained 1 epoch).
TEST(Config, ASecondYamlDocumentIsRefusedNotDropped) {
  const auto message = config_error({{}, {}, "train:\n  epochs: 1\n---\ntrain:\n  epochs: 2\n"});
  EXPECT_NE(message.find(":4:1: a second YAML document, after a '---' line: gputrain reads one per config file"), std::string::npos)
      << message;
  EXPECT_NE(message.find("delete the '---' line"), std::string::npos) << message;
  // A leading '---', or a trailing one with nothing after it, is one document.
  EXPECT_EQ(load_config({{}, {}, "---\ntrain:\n  epochs: 3\n---\n"}).train.epochs, 3);
}

// yaml-cpp keeps a tag beside the value, and the value alone was read: PyYAML's dump of an
// optimizer object trained AdamW, `!include base.yaml` took the file's name as the value.
TEST(Config, TagsThatChangeAValuesMeaningAreRefusedPlainOnesRead) {
  auto message = config_error({{}, {}, "train:\n  epochs: 1\noptimizer: !!python/object:torch.optim.Adam {lr: 1}\n"});
  EXPECT_NE(message.find(":3:12: 'optimizer' carries the YAML tag '!!python/object:torch.optim.Adam', which gputrain does not read"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("yaml.safe_dump writes plain values"), std::string::npos) << message;
  message = config_error({{}, {}, "data:\n  path: !include other.yaml\n"});
  EXPECT_NE(message.find("'data.path' carries the YAML tag '!include'"), std::string::npos) << message;
  EXPECT_NE(message.find("gputrain train base.yaml this.yaml"), std::string::npos) << message;
  message = config_error({{}, {}, "model:\n  name: mlp\n  hidden: [64, !custom 32]\n"});
  EXPECT_NE(message.find("'model.hidden[1]' carries the YAML tag '!custom'"), std::string::npos) << message;
  message = config_error({{}, {"optimizer.lr=!!binary aGVsbG8="}, "train:\n  epochs: 1\n"});
  EXPECT_NE(message.find("--set optimizer.lr=!!binary aGVsbG8=: 'optimizer.lr' carries the YAML tag '!!binary'"), std::string::npos)
      << message;
  message = config_error({{}, {}, "train:\n  ? [epochs, steps]\n  : 3\n"});
  EXPECT_NE(message.find(":2:5: a key is a list, not a name"), std::string::npos) << message;
  // The core schema's tags, and PyYAML's for a tuple, are what the value already is.
  const auto config =
      load_config({{}, {}, "train: {epochs: !!int 2, batch_size: !!str 8}\nmodel: {name: mlp, hidden: !!python/tuple [16]}\n"});
  EXPECT_EQ(config.train.epochs, 2);
  EXPECT_EQ(config.train.batch_size, 8);
}

TEST(Config, SectionGivenAValueIsRejected) {
  const auto message = config_error({{config_fixture("section_as_value.yaml")}, {}, ""});
  EXPECT_NE(message.find("'logging' is a section"), std::string::npos) << message;
}

TEST(Config, InvalidYamlNamesTheLine) {
  const auto message = config_error({{config_fixture("bad_yaml.yaml")}, {}, ""});
  EXPECT_NE(message.find("bad_yaml.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
}

// A tab where YAML wants spaces is the usual broken file; the parser's own words do not say so.
TEST(Config, ATabIndentIsNamedAsSuch) {
  const auto message = config_error({{config_fixture("tab_indent.yaml")}, {}, ""});
  EXPECT_NE(message.find("tab_indent.yaml:4:"), std::string::npos) << message;
  EXPECT_NE(message.find("fix: indent with spaces: YAML does not allow tabs, and line 4 starts with one"), std::string::npos) << message;
}

// A key a space off its section's column: yaml-cpp says "end of map not found" or "illegal map
// value"; the fix names the columns the keys above it use.
TEST(Config, AMisalignedKeyIsNamedWithTheColumnsAboveIt) {
  const auto deeper = config_error({{config_fixture("misaligned_key.yaml")}, {}, ""});
  EXPECT_NE(deeper.find("misaligned_key.yaml:6:"), std::string::npos) << deeper;
  EXPECT_NE(deeper.find("fix: line 6 is indented 3 spaces, but the keys above it are indented 2 (line 3) or 0 (line 2): indent it as "
                        "the other keys of its section"),
            std::string::npos)
      << deeper;
  const auto shallower = config_error({{config_fixture("dedented_key.yaml")}, {}, ""});
  EXPECT_NE(shallower.find("fix: line 4 is indented 2 spaces, but the keys above it are indented 4 (line 3) or 0 (line 2)"),
            std::string::npos)
      << shallower;
  const auto crlf = std::filesystem::temp_directory_path() / "gputrain-misaligned-crlf.yaml";  // saved on Windows
  std::ofstream(crlf, std::ios::binary) << "train:\r\n  epochs: 3\r\n   batch_size: 4\r\n";
  const auto windows = config_error({{crlf.string()}, {}, ""});
  EXPECT_NE(windows.find("fix: line 3 is indented 3 spaces, but the keys above it are indented 2 (line 2) or 0 (line 1)"),
            std::string::npos)
      << windows;
  std::filesystem::remove(crlf);
  // A list left open names its '[' (other broken YAML keeps the general fix: test_yaml_hints.cpp).
  EXPECT_NE(config_error({{config_fixture("bad_yaml.yaml")}, {}, ""}).find("fix: the '[' at line 2, column 11 is never closed"),
            std::string::npos);
}

// A user fixing a config should meet all its mistakes in one run, each where it is, with its fix.
TEST(Config, EveryMistakeIsReportedAtOnce) {
  const auto message = config_error({{config_fixture("three_mistakes.yaml")}, {"train.batch_size=0"}, ""});
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
  const auto message = config_error({{}, sets, ""});
  EXPECT_EQ(message.rfind("25 problems in the config:\n", 0), 0U) << message;
  EXPECT_NE(message.find("unknown key 'train.k19'"), std::string::npos) << message;
  EXPECT_EQ(message.find("unknown key 'train.k20'"), std::string::npos) << message;
  EXPECT_NE(message.find("\n  ... and 5 more\n  fix: fix all 25 (the first 20 are above), then run again"), std::string::npos) << message;
}

TEST(Config, InconsistentKeysAreRejected) {
  EXPECT_NE(config_error({{}, {"data.task=regression", "checkpoint.best_metric=val_accuracy"}, ""}).find("needs data.task classification"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"model.name=transformer", "data.shape=[8, 4]", "model.heads=3"}, ""}).find("multiple of model.heads"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.standardize=true", "data.mean=[0.5]", "data.std=[0.2]"}, ""}).find("data.standardize measures"),
            std::string::npos);
  EXPECT_NE(config_error({{}, {"data.standardize_targets=true"}, ""})
                .find("data.standardize_targets scales regression targets, but data.task is classification"),
            std::string::npos);
}

// What a copy from a web page, a chat or a word processor brings into a config, named where it
// stands: before, a no-break space's indentation said "unknown key '  lr'", a zero-width space
// "found 'mlp'" with the name looking right, typographic quotes "data.path '‘d.csv’' does not exist".
TEST(Config, CharactersPastedFromTheWebAreNamedWhereTheyStand) {
  test_support::ScratchFolder folder("config-pasted");
  const auto error_of = [&](const std::string& text) {
    const auto path = (folder.path / "pasted.yaml").string();
    std::ofstream(path) << text;
    return config_error({{path}, {}, ""});
  };
  const auto file = (folder.path / "pasted.yaml").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"optimizer:\n\xC2\xA0\xC2\xA0lr: 0.01\n", ":2:1: a no-break space (U+00A0)"},
      {"optimizer:\n  lr:\xC2\xA0"
       "0.01\n",
       ":2:6: a no-break space (U+00A0)"},
      {"model: {name: mlp\xE2\x80\x8B}\n", ":1:18: a zero-width space (U+200B)"},
      {"model:\n  name: \xE2\x80\x9Cmlp\xE2\x80\x9D\n", ":2:9: a typographic quote (\xE2\x80\x9C, U+201C)"},
      {"data: {path: \xE2\x80\x98x.csv\xE2\x80\x99}\n", ":1:14: a typographic quote (\xE2\x80\x98, U+2018)"},
      {"model\xEF\xBC\x9A {name: mlp}\n", ":1:6: a full-width colon (\xEF\xBC\x9A, U+FF1A) after 'model'"},
      {"train:\n\xE3\x80\x80\xE3\x80\x80"
       "epochs: 2\n",
       ":2:1: an ideographic space (U+3000)"},
  };
  for (const auto& [text, said] : cases) EXPECT_NE(error_of(text).find(file + said), std::string::npos) << error_of(text);
  EXPECT_NE(
      error_of("optimizer:\n\xC2\xA0 lr: 1\n").find("fix: replace it with a plain space (every one: sed -i 's/\\xc2\\xa0/ /g' " + file),
      std::string::npos);
  // Inside quotes, comments and block scalars they are text, as YAML reads them.
  for (const std::string text :
       {"logging: {dir: \"runs/caf\xC2\xA0\xE2\x80\x9Cx\xE2\x80\x9D\"}\n",
        "# a comment\xC2\xA0with \xE2\x80\x9Cquotes\xE2\x80\x9D\ntrain: {epochs: 2}\n",
        "logging:\n  dir: >-\n    runs/Bob\xE2\x80\x99s\xC2\xA0run\ntrain: {epochs: 2}\n", "logging: {dir: runs/Bob\xE2\x80\x99s run}\n"}) {
    const auto path = (folder.path / "fine.yaml").string();
    std::ofstream(path) << text;
    EXPECT_NO_THROW(load_config({{path}, {}, ""})) << text;
  }
  EXPECT_NE(config_error({{},
                          {"optimizer.lr=\xC2\xA0"
                           "0.01"},
                          ""})
                .find("--set optimizer.lr=\xC2\xA0"
                      "0.01: a no-break space (U+00A0)"),
            std::string::npos);
}

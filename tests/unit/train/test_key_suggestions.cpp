// What gputrain suggests for a setting written where it does not belong: a command-line flag that
// is a config key (train::flag_as_setting) and a key written short ("logging.every").
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

std::string unknown_key_message(const std::string& setting) {
  try {
    load_config({{}, {setting}, ""});
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << setting << " was accepted";
  return "";
}

}  // namespace

TEST(FlagAsSetting, AKeysOwnLeafBecomesItsSetWithTheGivenValue) {
  EXPECT_EQ(flag_as_setting("--epochs", "5"), "a setting is given with --set: --set train.epochs=5 (docs/configuration.md)");
  // Dashes read as the keys' underscores; no value given reads VALUE.
  EXPECT_EQ(flag_as_setting("--batch-size", ""), "a setting is given with --set: --set train.batch_size=VALUE (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--lr", "0.1"), "a setting is given with --set: --set optimizer.lr=0.1 (docs/configuration.md)");
}

// A boolean key's flag given bare is a switch turned on, whatever word follows it.
TEST(FlagAsSetting, ABareSwitchOfABooleanKeyIsSetTrue) {
  EXPECT_EQ(flag_as_setting("--deterministic", ""),
            "a setting is given with --set: --set train.deterministic=true (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--deterministic", "configs/x.yaml"),
            "a setting is given with --set: --set train.deterministic=true (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--deterministic", "false"),
            "a setting is given with --set: --set train.deterministic=false (docs/configuration.md)");
}

// Flags of other tools (and quick-train's own) that no key here is: what does their work.
TEST(FlagAsSetting, FlagsOfNoSettingNameWhatDoesTheirWork) {
  EXPECT_NE(flag_as_setting("--allow-cpu", "").find("--allow-cpu is quick-train's: gputrain train runs on the CPU by itself"),
            std::string::npos);
  EXPECT_NE(flag_as_setting("--compile", "").find("train.cuda_graphs: auto"), std::string::npos);
  EXPECT_EQ(flag_as_setting("--torch_compile", ""), flag_as_setting("--compile", ""));
  EXPECT_NE(flag_as_setting("--profile", "").find("gputrain profile --step CONFIG"), std::string::npos);
  EXPECT_EQ(flag_as_setting("--no-cuda", ""),
            "Hugging Face's --no_cuda is device.name here: --set device.name=cpu (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--amp", ""), "timm's --amp is train.precision here: --set train.precision=fp16-mixed (docs/configuration.md)");
}

TEST(FlagAsSetting, AWholeKeyWrittenAsAFlagIsThatKey) {
  EXPECT_EQ(flag_as_setting("--train.max_steps", "3"), "a setting is given with --set: --set train.max_steps=3 (docs/configuration.md)");
}

TEST(FlagAsSetting, AnotherToolsFlagIsSaidAsOurKeyWithItsValue) {
  EXPECT_EQ(flag_as_setting("--learning_rate", "3e-4"),
            "Hugging Face's --learning_rate is optimizer.lr here: --set optimizer.lr=3e-4 (docs/configuration.md)");
  // A switch whose meaning is a value of ours takes that value, not the next word.
  EXPECT_EQ(flag_as_setting("--bf16", "configs/x.yaml"),
            "Hugging Face's --bf16 is train.precision here: --set train.precision=bf16-mixed (docs/configuration.md)");
  // A note after the key is not part of it.
  EXPECT_EQ(flag_as_setting("--per_device_eval_batch_size", "8"),
            "Hugging Face's --per_device_eval_batch_size is train.batch_size here: --set train.batch_size=8 (docs/configuration.md)");
}

TEST(FlagAsSetting, ASwitchTurnedOffIsItsKeySetToOff) {
  EXPECT_EQ(flag_as_setting("--no-cuda-graphs", ""), "a setting is given with --set: --set train.cuda_graphs=off (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--no-shuffle", ""), "a setting is given with --set: --set data.shuffle=off (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--no-such-thing", ""), "");
}

TEST(FlagAsSetting, NamesThatAreNoKeyOrSeveralGetNothing) {
  EXPECT_EQ(flag_as_setting("--outdir", "x"), "");
  EXPECT_EQ(flag_as_setting("--name", "mlp"), "");  // model.name, optimizer.name, ...: which one is not for us to guess
  EXPECT_EQ(flag_as_setting("epochs", "5"), "");    // not a flag
  EXPECT_EQ(flag_as_setting("--", ""), "");
  EXPECT_EQ(flag_as_setting("", ""), "");
}

TEST(KeySuggestions, AKeyWrittenShortSuggestsTheOneItBegins) {
  EXPECT_NE(unknown_key_message("logging.every=3").find("unknown key 'logging.every'; did you mean 'logging.every_steps'?"),
            std::string::npos);
  // Two keys begin so: no guess, the remedy lists the section's keys.
  EXPECT_EQ(unknown_key_message("train.early_stop=3").find("did you mean"), std::string::npos);
}

// YAML's keys are case-sensitive: a key or section in another case is named in ours.
TEST(KeySuggestions, AKeyInAnotherCaseIsNamedInLowerCase) {
  EXPECT_NE(unknown_key_message("TRAIN.EPOCHS=3").find("unknown key 'TRAIN.EPOCHS'; keys are lower case: did you mean 'train.epochs'?"),
            std::string::npos);
  EXPECT_NE(unknown_key_message("Optimizer.LR=0.1").find("did you mean 'optimizer.lr'?"), std::string::npos);
  EXPECT_NE(unknown_key_message("Train=3").find("did you mean 'train'?"), std::string::npos);
}

// "steps" is train.profile.steps' leaf, but `--steps 100` and `train.steps` mean how long to train.
TEST(KeySuggestions, PlainWordsForHowLongAndHowLargeAreTheKeysMeant) {
  EXPECT_EQ(flag_as_setting("--steps", "100"), "a setting is given with --set: --set train.max_steps=100 (docs/configuration.md)");
  EXPECT_EQ(flag_as_setting("--bs", "64"), "a setting is given with --set: --set train.batch_size=64 (docs/configuration.md)");
  EXPECT_NE(unknown_key_message("train.steps=5").find("did you mean 'train.max_steps'?"), std::string::npos);
  EXPECT_NE(unknown_key_message("train.iterations=5").find("did you mean 'train.max_steps'?"), std::string::npos);
  // In another section the word keeps that section's meaning.
  EXPECT_NE(unknown_key_message("profile.steps=5").find("did you mean 'train.profile.steps'?"), std::string::npos);
  // In its key's own section too: a validation share by the names scripts give it.
  EXPECT_NE(unknown_key_message("data.val_split=0.1").find("did you mean 'data.val_fraction'?"), std::string::npos);
  EXPECT_NE(unknown_key_message("data.validation_split=0.1").find("Keras's validation_split is data.val_fraction here"), std::string::npos);
}

// Names scripts give settings, each got no guess or a wrong one (train.log_every -> train.ema_every).
TEST(KeySuggestions, TheNamesTrainingScriptsUseAreTheKeysMeant) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.log_every", "did you mean 'logging.every_steps'?"},
      {"train.num_epochs", "did you mean 'train.epochs'?"},
      {"logging.log_dir", "did you mean 'logging.dir'?"},
      {"data.train_path", "did you mean 'data.path'?"},
      {"data.val_dir", "did you mean 'data.val_path'?"},
      {"checkpoint.save_every", "did you mean 'checkpoint.every_steps'?"},
      {"checkpoint.path", "did you mean 'checkpoint.dir' (where checkpoints go) or 'checkpoint.resume' (one to go on from)?"},
      {"scheduler.type", "did you mean 'scheduler.name'?"},
      {"model.arch", "did you mean 'model.name'?"},
      {"model.pretrained", "did you mean 'model.init_weights'?"},
      {"model.dropout_rate", "did you mean 'model.dropout'?"},
      {"model.num_classes", "timm's num_classes is data.classes here"},
      {"device.gpus", "Lightning's gpus is distributed.nproc_per_node here"},
  };
  for (const auto& [written, meant] : cases)
    EXPECT_NE(unknown_key_message(written + "=1").find("unknown key '" + written + "'; " + meant), std::string::npos)
        << written << ": " << unknown_key_message(written + "=1");
}

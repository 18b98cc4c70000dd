// Checkpoints of format 3: dicts torch.load(weights_only=True) opens, with the keys
// docs/checkpoints.md lists; a checkpoint of format 2 (LibTorch's archive) still resumes; a
// format-3 file missing a field or of a newer format is refused with the fix. Python's side of
// the format is tests/cli/check_python_checkpoints.py.
#include <ATen/ops/allclose.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"
#include "train/models/state_dict_file.hpp"  // private: the torch.save reader

namespace fs = std::filesystem;
using namespace gputrain;
using namespace gputrain::train;

namespace {

std::set<std::string> keys_of(const c10::IValue& dict) {
  std::set<std::string> keys;
  for (const auto& entry : dict.toGenericDict()) keys.insert(entry.key().toStringRef());
  return keys;
}

// A torch.save-style file holding `dict`, as a Python script editing a checkpoint might leave it.
std::string write_pickle(const fs::path& folder, const c10::impl::GenericDict& dict) {
  const auto path = (folder / "step-00000001.pt").string();
  const auto bytes = torch::jit::pickle_save(dict);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

TEST(Checkpoints, AreTorchSaveDictsWithTheDocumentedKeys) {
  const auto config = test_support::small_run("python-checkpoint", {"optimizer.name=adamw", "checkpoint.every_epochs=1"});
  const auto result = Trainer(config, test_support::quiet_trainer()).fit();
  ASSERT_TRUE(is_torch_save_archive(result.last_checkpoint));
  const auto saved = unpickle_torch_save(result.last_checkpoint);
  EXPECT_EQ(keys_of(saved),
            (std::set<std::string>{"format", "format_version", "model", "optimizer", "scaler", "scheduler", "progress", "config"}));
  const auto top = saved.toGenericDict();
  EXPECT_EQ(top.at("format_version").toInt(), 3);
  EXPECT_EQ(keys_of(top.at("optimizer")), (std::set<std::string>{"state", "param_groups"}));
  EXPECT_EQ(keys_of(top.at("progress")), (std::set<std::string>{"step", "epoch", "position", "global_batch", "world_size", "train_samples",
                                                                "trained_seconds", "data_rows", "callbacks", "rng"}));
  EXPECT_EQ(top.at("progress").toGenericDict().at("step").toInt(), result.steps);
  EXPECT_TRUE(keys_of(top.at("scaler")).empty()) << "fp32: PyTorch's disabled GradScaler's state_dict is {} too";
  EXPECT_EQ(keys_of(top.at("model")).count("1.weight"), 1U);
}

// tests/data/checkpoints/format2: 2 epochs of AdamW written by gputrain at fa2b7c5. Resumed for a
// third epoch, it ends where a run of 3 epochs from the start ends: AdamW's moments and step
// counts came back (float rounding aside: the fixture was written on another machine).
TEST(Checkpoints, AFormat2CheckpointResumesExactly) {
  const fs::path fixture = fs::path(gputrain::test_support::test_data_dir()) / "checkpoints" / "format2";
  test_support::ScratchFolder run("format2-resume");
  fs::copy(fixture, run.path, fs::copy_options::recursive);
  const auto settings = [&](const fs::path& dir) {
    return std::vector<std::string>{"logging.dir=" + dir.string(), "checkpoint.dir=", "train.epochs=3", "logging.progress=off"};
  };
  Trainer resumed(load_config({{(run.path / "config.yaml").string()}, settings(run.path), ""}), test_support::quiet_trainer());
  const auto result = resumed.fit();
  EXPECT_EQ(result.start_step, 8);
  EXPECT_EQ(result.steps, 12);

  test_support::ScratchFolder fresh("format2-uninterrupted");
  Trainer whole(load_config({{(fixture / "config.yaml").string()}, settings(fresh.path), ""}), test_support::quiet_trainer());
  whole.fit();
  const auto theirs = whole.model().named_state();
  const auto ours = resumed.model().named_state();
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) EXPECT_TRUE(at::allclose(ours[i].second, theirs[i].second, 1e-4, 1e-5)) << ours[i].first;
}

TEST(Checkpoints, AFieldMissingIsDamageNamedWithTheFix) {
  test_support::ScratchFolder folder("format3-missing");
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", "gputrain checkpoint");
  dict.insert("format_version", std::int64_t{3});
  const auto path = write_pickle(folder.path, dict);
  try {
    checkpoint_progress(path);
    FAIL() << "a checkpoint without its fields was read";
  } catch (const CheckpointDamaged& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint '" + path + "': scheduler is missing"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("checkpoint.resume: never"), std::string::npos);
  }
}

TEST(Checkpoints, AFormat3FileOfANewerFormatIsRefused) {
  test_support::ScratchFolder folder("format3-newer");
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", "gputrain checkpoint");
  dict.insert("format_version", std::int64_t{4});
  const auto path = write_pickle(folder.path, dict);
  try {
    checkpoint_progress(path);
    FAIL() << "a format-4 checkpoint was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is of format 4, written by a newer gputrain (this one reads up to 3)"), std::string::npos)
        << e.what();
  }
}

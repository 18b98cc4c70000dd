// A checkpoint damaged on disk or in a copy (support/damaged_copies.hpp), read each way a run reads
// one: its config (the resume check), its weights (best.pt at a run's end, --evaluate) and its
// whole state (a resume). Each damaged copy is refused with an error naming the file, never
// LibTorch's own exception or a crash, unless the damage missed everything read: LibTorch does not
// check its records' CRC-32s, gputrain does, so a changed weight is never loaded.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/optimizer.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "gputrain/train/optimizer.hpp"
#include "support/damaged_copies.hpp"
#include "support/quiet_trainer.hpp"
#include "support/scratch_folder.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

// A checkpoint of the small run, and what it was written from.
struct WrittenCheckpoint {
  Config config;
  std::string path;
};

const WrittenCheckpoint& written_checkpoint() {
  // A run folder per process (removed at exit): ctest runs each of these tests in a process of its
  // own, side by side, and one must not empty the folder another reads.
  static const test_support::ScratchFolder folder("damaged-checkpoints");
  static const WrittenCheckpoint written = [] {
    auto config = test_support::small_run("damaged-checkpoints", {"train.epochs=1", "logging.dir=" + (folder.path / "run").string()});
    Trainer trainer(config, test_support::quiet_trainer());
    return WrittenCheckpoint{config, trainer.fit().last_checkpoint};
  }();
  return written;
}

std::unique_ptr<Model> small_model() { return build_model({written_checkpoint().config.model, {10}, 3}); }

bool same_state(Model& a, Model& b) {
  const auto x = a.named_state(), y = b.named_state();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !at::equal(x[i].second, y[i].second)) return false;
  return true;
}

Error error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error("", "");
}

}  // namespace

TEST(DamagedCheckpoints, TheConfigIsReadOrRefused) {
  ASSERT_FALSE(written_checkpoint().path.empty());
  test_support::read_damaged_copies(written_checkpoint().path, [](const std::string& path) { (void)checkpoint_config(path); });
}

TEST(DamagedCheckpoints, TheWeightsAreRefusedOrExactlyThoseWritten) {
  auto written = small_model();
  load_checkpoint_weights(written_checkpoint().path, *written, c10::Device(at::kCPU));
  auto model = small_model();
  test_support::read_damaged_copies(written_checkpoint().path, [&](const std::string& path) {
    (void)load_checkpoint_weights(path, *model, c10::Device(at::kCPU));
    if (!same_state(*model, *written)) throw std::runtime_error("loaded weights other than those written");
  });
}

TEST(DamagedCheckpoints, AResumeReadsTheWholeStateOrRefusesIt) {
  auto model = small_model();
  auto optimizer = make_optimizer(written_checkpoint().config.optimizer, model->parameters());
  GradScaler scaler(false, at::kCPU);
  const CheckpointParts parts{*model, *optimizer, scaler, c10::Device(at::kCPU)};
  test_support::read_damaged_copies(written_checkpoint().path, [&](const std::string& path) { (void)load_checkpoint(path, parts); });
}

// A periodic checkpoint changed on disk stops the resume that would have continued from it, naming
// the record that changed and the newest intact checkpoint; deleted as told, the run resumes there.
TEST(DamagedCheckpoints, AResumeRefusesAChangedCheckpointAndNamesTheIntactOneBeforeIt) {
  const std::vector<std::string> every_two_steps{"train.epochs=1", "checkpoint.every_steps=2", "checkpoint.every_epochs=0"};
  {
    Trainer trainer(test_support::small_run("damaged-resume", every_two_steps), test_support::quiet_trainer());
    ASSERT_EQ(trainer.fit().steps, 6);
  }
  const auto config = test_support::small_run("damaged-resume", {"train.epochs=2", "checkpoint.every_steps=2", "checkpoint.every_epochs=0"},
                                              /*fresh=*/false);
  const auto folder = std::filesystem::path(config.checkpoint_dir());
  const auto latest = (folder / "step-00000006.pt").string();
  const auto before = (folder / "step-00000004.pt").string();
  test_support::flip_a_bit_midway(latest);

  const auto e = error_of([&] { Trainer(config, test_support::quiet_trainer()).fit(); });
  const std::string said = std::string(e.what()) + "\n" + e.remedy();
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
  EXPECT_NE(said.find("checkpoint '" + latest + "' is damaged: its record '"), std::string::npos) << said;
  EXPECT_NE(said.find("' is not what was written (CRC error): a disk or a copy changed the file after it was written"), std::string::npos)
      << said;
  EXPECT_NE(e.remedy().find("delete it, and checkpoint.resume: auto resumes from " + before + ", the newest intact checkpoint beside it"),
            std::string::npos)
      << e.remedy();

  std::filesystem::remove(latest);
  Trainer resumed(config, test_support::quiet_trainer());
  const auto result = resumed.fit();
  EXPECT_EQ(result.start_step, 4);
  EXPECT_EQ(result.steps, 12);
}

// A config file damaged the same ways (a cut-short copy, changed bytes) loads, when what is left is
// still a valid config, or is refused with an error that names the file.
TEST(DamagedConfigs, AConfigFileIsLoadedOrRefusedNamingIt) {
  const std::string quickstart = std::string(gputrain::test_support::source_dir()) + "/configs/quickstart.yaml";
  test_support::read_damaged_copies(quickstart, [](const std::string& path) { (void)load_config({{path}, {}, ""}); });
}

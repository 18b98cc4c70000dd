// checkpoint.resume pointed at something that is not a checkpoint gputrain wrote: each mistake
// users make gets its own message and fix, never LibTorch's paragraph about miniz.

#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;

namespace {

const std::string kFixtures = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/";

// The error reading `path` throws, as the CLI prints it.
Error error_reading(const std::string& path) {
  try {
    train::checkpoint_config(path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << path << " was read as a checkpoint";
  return Error("", "");
}

std::string text(const Error& e) { return std::string(e.what()) + "\n  fix: " + e.remedy(); }

}  // namespace

TEST(CheckpointErrors, AWeightsFileGetsInitWeightsAsTheFix) {
  const auto e = error_reading(kFixtures + "weights.safetensors");
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
  EXPECT_NE(text(e).find("it is a safetensors weights file, which holds no optimizer state or step to resume from"), std::string::npos)
      << text(e);
  EXPECT_NE(e.remedy().find("set model.init_weights: " + kFixtures + "weights.safetensors and checkpoint.resume: never"), std::string::npos)
      << e.remedy();
}

TEST(CheckpointErrors, APythonTorchSaveFileIsNamedAsOne) {
  const auto e = error_reading(kFixtures + "python_torch_save.pt");
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
  EXPECT_NE(text(e).find("it is a torch.save file that holds no gputrain run to resume"), std::string::npos) << text(e);
  EXPECT_NE(e.remedy().find("set model.init_weights: " + kFixtures + "python_torch_save.pt and checkpoint.resume: never"),
            std::string::npos)
      << e.remedy();
  EXPECT_EQ(text(e).find("miniz"), std::string::npos) << text(e);
}

TEST(CheckpointErrors, ATextFileIsNotACheckpoint) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-checkpoint-errors-config.yaml").string();
  std::ofstream(path) << "train:\n  epochs: 3\n";
  const auto e = error_reading(path);
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
  EXPECT_NE(text(e).find("it is not a checkpoint (gputrain's are zip archives"), std::string::npos) << text(e);
  std::filesystem::remove(path);
}

// A run's folder (or its checkpoints folder) given for a checkpoint: the fix names the newest
// checkpoint in it.
TEST(CheckpointErrors, ARunFolderGetsItsNewestCheckpointAsTheFix) {
  const auto run = std::filesystem::temp_directory_path() / "gputrain-checkpoint-errors-run";
  std::filesystem::remove_all(run);
  std::filesystem::create_directories(run / "checkpoints");
  for (const char* name : {"step-00000010.pt", "step-00000002.pt", "best.pt"}) std::ofstream(run / "checkpoints" / name) << "x";
  for (const auto& given : {run, run / "checkpoints"}) {
    const auto e = error_reading(given.string());
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    EXPECT_NE(text(e).find("it is a folder; checkpoint.resume names a checkpoint file"), std::string::npos) << text(e);
    EXPECT_NE(e.remedy().find("set checkpoint.resume: " + (run / "checkpoints" / "step-00000010.pt").string() + ", the newest"),
              std::string::npos)
        << e.remedy();
  }
  std::filesystem::remove_all(run / "checkpoints");
  EXPECT_NE(error_reading(run.string()).remedy().find("(the folder holds none)"), std::string::npos);
  std::filesystem::remove_all(run);
}

// A zip cut short (a full disk, a copy interrupted) is named as such, never with LibTorch's
// paragraph about miniz.
TEST(CheckpointErrors, ATruncatedArchiveIsNamedAsCutShort) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-checkpoint-errors-cut.pt").string();
  torch::serialize::OutputArchive archive;
  archive.write("weights", at::zeros({64, 64}), /*is_buffer=*/true);
  archive.save_to(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const auto e = error_reading(path);
  EXPECT_EQ(e.exit_code(), ExitCode::usage);
  EXPECT_NE(text(e).find("is damaged: its zip directory cannot be read (Not a zip archive): the file was cut short (a full disk, a copy "
                         "interrupted) or changed after it was written"),
            std::string::npos)
      << text(e);
  EXPECT_EQ(text(e).find("miniz"), std::string::npos) << text(e);
  std::filesystem::remove(path);
}

// Data changed under a run. A file the run reads where it lies (data_file_watch callback): rewritten
// in place, the run warns once, naming the file; replaced by another file (mv, os.replace), it reads
// on from the file it opened and says nothing. A streamed image folder moved away: the first epoch
// that reads none of its samples ends the run, which resumes once the folder is back.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
namespace fs = std::filesystem;

namespace {

// Features kept as they are (no standardizing copy), so batches are gathered from the mapping.
std::string write_data(const fs::path& path) {
  data::write_safetensors(path.string(), {{"x", at::randn({96, 10})}, {"y", at::arange(96, at::kLong) % 3}});
  return path.string();
}

// Overwrites the file's last bytes at its size, and moves its modification time a second on (a
// file system's clock may be coarser than the test).
void rewrite_in_place(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char zeros[64] = {};
  ASSERT_EQ(::pwrite(fd, zeros, sizeof zeros, static_cast<off_t>(fs::file_size(path) - sizeof zeros)), 64);
  struct stat info {};
  ASSERT_EQ(::fstat(fd, &info), 0);
  timespec times[2] = {info.st_atim, info.st_mtim};
  times[1].tv_sec += 1;
  ASSERT_EQ(::futimens(fd, times), 0);
  ::close(fd);
}

std::string run_changing_data(const std::string& name, const std::function<void(const std::string&)>& change) {
  const auto path = write_data(fs::temp_directory_path() / ("gputrain-watch-" + name + ".safetensors"));
  auto config = test_support::small_run(
      "watch-" + name, {"data.source=safetensors", "data.path=" + path, "data.standardize=false", "data.val_samples=0", "data.cache=auto"});
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  options.after_step = [&](std::int64_t step) {
    if (step == 2) change(path);
  };
  config.logging.progress = "lines";
  train::Trainer trainer(config, options);
  EXPECT_EQ(trainer.fit().steps, 12);
  fs::remove(path);
  return console.str();
}

}  // namespace

TEST(DataFileWatch, AFileRewrittenInPlaceMidRunIsNamedOnce) {
  const auto console = run_changing_data("in-place", rewrite_in_place);
  const std::string warning = "gputrain-watch-in-place.safetensors' was rewritten in place while this run read it";
  const auto said = console.find(warning);
  ASSERT_NE(said, std::string::npos) << console;
  EXPECT_EQ(console.find(warning, said + warning.size()), std::string::npos) << "warned twice:\n" << console;
  EXPECT_NE(console.find("move it over the old one"), std::string::npos) << console;
}

// Cut within its last page, a mapped file reads as zeros past its new end: no fault, a warning.
TEST(DataFileWatch, AFileCutShortWithinItsLastPageIsNamedWithItsNewSize) {
  const auto console = run_changing_data("cut", [](const std::string& path) { fs::resize_file(path, fs::file_size(path) - 64); });
  EXPECT_NE(console.find("gputrain-watch-cut.safetensors' was cut short to "), std::string::npos) << console;
  EXPECT_NE(console.find("(zeros past its new end)"), std::string::npos) << console;
}

TEST(DataFileWatch, AFileReplacedByAnotherMidRunIsNoChangeToTheRun) {
  const auto console = run_changing_data("replaced", [](const std::string& path) {
    write_data(path + ".new");
    fs::rename(path + ".new", path);
  });
  EXPECT_EQ(console.find("rewritten in place"), std::string::npos) << console;
}

TEST(DataGoneMidRun, AnEpochThatReadsNoneOfItsSamplesEndsTheRunWhichResumesOnceTheyAreBack) {
  const auto images = fs::temp_directory_path() / "gputrain-gone-images";
  fs::remove_all(images);
  fs::remove_all(images.string() + ".away");
  fs::create_directories(images);
  for (const std::string part : {"train", "val"})
    fs::copy(std::string(test_support::format_fixtures_dir()) + "/folder/" + part, images / part, fs::copy_options::recursive);
  auto config =
      test_support::small_run("gone", {"data.source=image_folder", "data.path=" + (images / "train").string(),
                                       "data.val_path=" + (images / "val").string(), "data.image_size=[8, 8]", "data.classes=auto",
                                       "model.name=small_cnn", "train.batch_size=4", "data.cache=none", "train.epochs=3"});
  config.logging.progress = "lines";
  std::ostringstream console;
  auto options = test_support::quiet_trainer();
  options.console = &console;
  options.after_step = [&](std::int64_t step) {
    if (step == 2) fs::rename(images, images.string() + ".away");  // epoch 1's last step, before its validation
  };
  try {
    train::Trainer(config, options).fit();
    ADD_FAILURE() << "a run whose data went away ran on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("epoch 2 read none of its 8 samples: each was unreadable"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("put the data back at data.path"), std::string::npos) << e.remedy();
    EXPECT_NE(e.remedy().find("it resumes from "), std::string::npos) << e.remedy();
  }
  EXPECT_NE(console.str().find("warning: validation after epoch 1 read none of its 2 samples: each was unreadable"), std::string::npos)
      << console.str();
  fs::rename(images.string() + ".away", images);
  train::Trainer again(config, test_support::quiet_trainer());
  const auto resumed = again.fit();
  EXPECT_EQ(resumed.start_step, 2);
  EXPECT_EQ(resumed.steps, 6);
  ASSERT_TRUE(resumed.last_epoch.has_value());
  EXPECT_EQ(resumed.last_epoch->val_samples, 2);
  fs::remove_all(images);
}

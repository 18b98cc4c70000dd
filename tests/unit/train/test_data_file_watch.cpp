// A data file rewritten under a run that reads it where it lies (data_file_watch callback): in
// place, the run warns once, naming the file; replaced by another file (mv, os.replace), it reads
// on from the file it opened and says nothing.
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

#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"
#include "support/small_run.hpp"

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

TEST(DataFileWatch, AFileReplacedByAnotherMidRunIsNoChangeToTheRun) {
  const auto console = run_changing_data("replaced", [](const std::string& path) {
    write_data(path + ".new");
    fs::rename(path + ".new", path);
  });
  EXPECT_EQ(console.find("rewritten in place"), std::string::npos) << console;
}

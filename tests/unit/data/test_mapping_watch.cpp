// A mapped data file cut short under a run (numpy.save over it, a disk that fails to read): reading
// its lost bytes ends the process with an error that names the file, not "Bus error"
// (src/data/mapping_watch.hpp). Each case runs in a child process of its own (a death test).
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gputrain/data/safetensors.hpp"
#include "support/scratch_folder.hpp"

using namespace gputrain;

namespace {

// 4 MiB of float32: the last element lies pages past the start, where a cut-short file has none.
std::string write_features(const test_support::ScratchFolder& scratch) {
  const auto path = (scratch.path / "features.safetensors").string();
  data::write_safetensors(path, {{"x", at::arange(1 << 20, at::kFloat)}});
  return path;
}

// Cuts the file to nothing and removes its folder: the child process that reads it next ends
// before any destructor could.
void cut_short(const std::string& path, const test_support::ScratchFolder& scratch) {
  if (::truncate(path.c_str(), 0) != 0) std::abort();
  std::filesystem::remove_all(scratch.path);
}

}  // namespace

TEST(MappingWatch, ReadingAFileCutShortUnderItsTensorsEndsTheRunWithAnErrorNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        test_support::ScratchFolder scratch("mapping-faults");
        const auto path = write_features(scratch);
        // More files opened and released than there are places to watch: each frees its place.
        for (int i = 0; i < 300; ++i) (void)data::read_safetensors(path);
        const auto tensors = data::read_safetensors(path);
        cut_short(path, scratch);
        std::printf("%f\n", tensors.front().second[-1].item<float>());
      },
      testing::ExitedWithCode(1),
      "error: data file '.*features.safetensors' changed while this run read it: byte [0-9]+ of its [0-9]+ can no longer be "
      "read \\(the file was cut short or rewritten in place.*\n  fix: write new data to a new file and move it over the old one");
}

TEST(MappingWatch, AFaultInAMappingThatIsNoDataFileStaysABusError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        test_support::ScratchFolder scratch("mapping-faults-other");
        const auto path = write_features(scratch);
        (void)data::read_safetensors(path);  // installs the handler
        const int fd = ::open(path.c_str(), O_RDONLY);
        const auto size = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
        const auto* bytes = static_cast<const volatile char*>(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
        cut_short(path, scratch);
        std::printf("%d\n", bytes[size - 1]);
      },
      testing::KilledBySignal(SIGBUS), "");
}

#pragma once
// A folder of its own for one test, <tmp>/gputrain-<name>-<pid>, removed with everything in it
// when the test ends.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace gputrain::test_support {

struct ScratchFolder {
  explicit ScratchFolder(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("gputrain-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ScratchFolder() { std::filesystem::remove_all(path); }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  std::filesystem::path path;
};

}  // namespace gputrain::test_support

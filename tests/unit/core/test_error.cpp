#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/log.hpp"

using namespace gputrain;

TEST(Error, CarriesMessageRemedyAndExitCode) {
  const Error error("disk full", "free space", ExitCode::failure);
  EXPECT_STREQ(error.what(), "disk full");
  EXPECT_EQ(error.remedy(), "free space");
  EXPECT_EQ(error.exit_code(), ExitCode::failure);
}

TEST(Error, SubclassesMapToTheirExitCodes) {
  EXPECT_EQ(UsageError("x", "y").exit_code(), ExitCode::usage);
  EXPECT_EQ(EnvironmentError("x", "y").exit_code(), ExitCode::environment);
  EXPECT_EQ(static_cast<int>(ExitCode::usage), 2);
  EXPECT_EQ(static_cast<int>(ExitCode::environment), 3);
  EXPECT_EQ(static_cast<int>(ExitCode::interrupted), 130);
}

// An allocator's error that reached the command without gputrain's words still gets a fix.
TEST(Error, AnUnexplainedOutOfMemoryErrorGetsTheMemoryFix) {
  EXPECT_NE(core::fix_for_unexplained("CPU out of memory: tried to allocate 1.75 MiB; 3.19 KiB already allocated under a cap")
                .find("device.max_memory"),
            std::string::npos);
  EXPECT_NE(core::fix_for_unexplained("CUDA out of memory. Tried to allocate 2.00 GiB").find("--max-memory"), std::string::npos);
  EXPECT_EQ(core::fix_for_unexplained("mat1 and mat2 shapes cannot be multiplied"), "");
}

// LibTorch's CPU allocator's failure, as it reached the console from a too-large synthetic
// labeller: said as RAM, with the bytes readable, and given the memory fix.
TEST(Error, TheCpuAllocatorsFailureIsSaidAsHostMemoryWithItsSize) {
  const std::string what =
      "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate "
      "68719476736 bytes. Error code 12 (Cannot allocate memory)\nframe #0: c10::ThrowEnforceNotMet(...)";
  EXPECT_EQ(core::message_for_unexplained(what),
            "out of host memory: an allocation of 64.00 GiB in RAM failed (LibTorch's CPU allocator: can't allocate memory: you "
            "tried to allocate 68719476736 bytes. Error code 12 (Cannot allocate memory))");
  EXPECT_NE(core::fix_for_unexplained(what).find("make what must fit smaller"), std::string::npos);
  EXPECT_EQ(core::message_for_unexplained("mat1 and mat2 shapes cannot be multiplied\nException raised from x"),
            "mat1 and mat2 shapes cannot be multiplied");
}

// A thread the system will not start (`ulimit -u`, a container's pids limit) was "error: Resource
// temporarily unavailable" and no fix. In a child that is `nobody` (as root) and may run one process.
TEST(Error, AThreadTheSystemWillNotStartNamesTheLimitOnProcesses) {
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 && ::setuid(65534) != 0) std::_Exit(5);
        rlimit one{};
        one.rlim_cur = one.rlim_max = 1;
        ::setrlimit(RLIMIT_NPROC, &one);
        try {
          std::thread([] {}).join();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s | %s\n", core::message_for_unexplained(e).c_str(), core::fix_for_unexplained(e).c_str());
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(3), "the system would not start another thread: .+ \\| .*`ulimit -u` \\(1 now\\)");
  const std::runtime_error other("mat1 and mat2 shapes cannot be multiplied");
  EXPECT_EQ(core::message_for_unexplained(other), "mat1 and mat2 shapes cannot be multiplied");
  EXPECT_EQ(core::fix_for_unexplained(other), "");
}

TEST(LogLevel, ParsesKnownNamesAndRejectsOthersWithTheAllowedList) {
  EXPECT_EQ(core::parse_log_level("debug"), core::LogLevel::debug);
  EXPECT_EQ(core::parse_log_level("off"), core::LogLevel::off);
  EXPECT_EQ(core::parse_log_level("DEBUG"), core::LogLevel::debug);  // Python's logging names
  EXPECT_EQ(core::parse_log_level("WARNING"), core::LogLevel::warn);
  try {
    core::parse_log_level("verbose", "GPUTRAIN_LOG_LEVEL");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_EQ(std::string(error.what()), "GPUTRAIN_LOG_LEVEL is 'verbose', which is not a log level");
    EXPECT_NE(error.remedy().find("trace, debug, info, warn, error, off"), std::string::npos);
  }
  try {
    core::parse_log_level("errror");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& error) {
    EXPECT_EQ(error.remedy().rfind("did you mean error?", 0), 0u) << error.remedy();
  }
}

// std::filesystem's own failure ("filesystem error: status: Permission denied [/proc/1/...]"), as
// an image folder holding a folder this user may not read reached the console: the path and the
// reason, and a fix that names access.
TEST(Error, AFilesystemFailureNamesThePathAndAPermissionGetsAFix) {
  const auto denied = std::make_error_code(std::errc::permission_denied);
  EXPECT_EQ(core::message_for_filesystem_error("/data/lost+found", "", denied), "cannot use '/data/lost+found': Permission denied");
  EXPECT_EQ(core::message_for_filesystem_error("/a", "/b", std::make_error_code(std::errc::no_such_file_or_directory)),
            "cannot use '/a' and '/b': No such file or directory");
  EXPECT_NE(core::fix_for_filesystem_error("/data/lost+found", denied).find("ls -ld '/data/lost+found'"), std::string::npos);
  EXPECT_EQ(core::fix_for_filesystem_error("/a", std::make_error_code(std::errc::no_such_file_or_directory)), "");
}

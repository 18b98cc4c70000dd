#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "support/scratch_folder.hpp"

namespace fs = std::filesystem;
using gputrain::UsageError;
using gputrain::core::DirectoryLock;
using gputrain::test_support::ScratchFolder;

TEST(DirectoryLock, ASecondHolderIsRefusedWithTheFirstsPidAndTheKeyToChange) {
  ScratchFolder folder("lock-test");
  std::optional<DirectoryLock> first(std::in_place, folder.path.string(), "logging.dir");
  try {
    DirectoryLock second(folder.path.string(), "logging.dir");
    FAIL() << "a second lock on the same folder was granted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("another gputrain run (pid " + std::to_string(::getpid()) + ") is writing to '" +
                                         folder.path.string() + "' (logging.dir)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("--set logging.dir=<another folder>"), std::string::npos) << e.remedy();
  }
  first.reset();
  EXPECT_NO_THROW(DirectoryLock(folder.path.string(), "logging.dir")) << "released with its holder";
}

// A run folder on a shared file system (NFS) locked from another node: its pid is no process here.
TEST(DirectoryLock, AHolderOnAnotherMachineIsNamedWithItsHost) {
  ScratchFolder folder("lock-test");
  DirectoryLock first(folder.path.string(), "logging.dir");
  std::ofstream(folder.path / ".gputrain.lock", std::ios::trunc) << "4242@gpu-node-07";
  try {
    DirectoryLock second(folder.path.string(), "logging.dir");
    FAIL() << "a second lock on the same folder was granted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("another gputrain run (pid 4242 on gpu-node-07) is writing to"), std::string::npos) << e.what();
  }
}

// A run killed without unwinding (SIGKILL, a crash) must not leave the folder locked.
TEST(DirectoryLock, AProcessThatDiesWithoutCleaningUpLeavesNoStaleLock) {
  ScratchFolder folder("lock-test");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      DirectoryLock held(folder.path.string(), "logging.dir");
      ::_exit(0);  // no destructor runs
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not take the lock";
  EXPECT_TRUE(fs::exists(folder.path / ".gputrain.lock"));
  EXPECT_NO_THROW(DirectoryLock(folder.path.string(), "logging.dir"));
}

TEST(DirectoryLock, AFolderThatCannotHoldTheLockFileIsAUsageError) {
  EXPECT_THROW(DirectoryLock("/proc/no-such-folder", "checkpoint.dir"), UsageError);
}

namespace {
std::string lost_message(DirectoryLock& lock) {
  try {
    lock.check_still_held();
  } catch (const gputrain::Error& e) {
    EXPECT_EQ(e.exit_code(), gputrain::ExitCode::failure);
    return e.what();
  }
  return "held";
}
}  // namespace

// A folder deleted, moved away or replaced under a run is no longer its own: a second run may
// hold it now, and the checkpoints of both would mix. The lock says so before a checkpoint.
TEST(DirectoryLock, AFolderDeletedOrReplacedUnderItsHolderIsReported) {
  ScratchFolder folder("lock-test");
  DirectoryLock lock(folder.path.string(), "logging.dir");
  EXPECT_EQ(lost_message(lock), "held");
  fs::remove_all(folder.path);
  EXPECT_EQ(lost_message(lock), "'" + folder.path.string() +
                                    "' (logging.dir) was deleted or moved away while this run trained: nothing more is written there, "
                                    "where another run may be writing now");
  fs::create_directories(folder.path);
  EXPECT_NE(lost_message(lock).find("was replaced by another folder of that name while this run trained"), std::string::npos);
}

// A cleaner of old files (systemd-tmpfiles in /tmp) may remove the lock file alone: the folder is
// still the run's, so the lock is made and taken again, and a second run is still refused.
TEST(DirectoryLock, ALockFileRemovedFromTheSameFolderIsTakenAgain) {
  ScratchFolder folder("lock-test");
  DirectoryLock lock(folder.path.string(), "logging.dir");
  fs::remove(folder.path / ".gputrain.lock");
  EXPECT_NO_THROW(DirectoryLock(folder.path.string(), "logging.dir")) << "nothing holds a lock file that is not there";
  fs::remove(folder.path / ".gputrain.lock");
  EXPECT_EQ(lost_message(lock), "held");
  EXPECT_TRUE(fs::exists(folder.path / ".gputrain.lock"));
  EXPECT_THROW(DirectoryLock(folder.path.string(), "logging.dir"), UsageError);
}

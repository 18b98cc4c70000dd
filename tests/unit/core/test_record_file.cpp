#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/record_file.hpp"
#include "gputrain/core/write_error.hpp"
#include "support/file_size_limit.hpp"
#include "support/scratch_folder.hpp"
#include "support/text_checks.hpp"

using gputrain::core::RecordFile;
using gputrain::test_support::contains;
using gputrain::test_support::file_text;
using gputrain::test_support::FileSizeLimit;
using gputrain::test_support::ScratchFolder;

TEST(RecordFile, AppendsToWhatTheFileHeld) {
  ScratchFolder folder("record-file-append");
  const auto path = folder.path / "metrics.jsonl";
  std::ofstream(path) << "{\"step\":1}\n";
  RecordFile file(path.string());
  EXPECT_EQ(file.size(), 11u);
  EXPECT_FALSE(file.append("{\"step\":2}\n"));
  EXPECT_EQ(file.size(), 22u);
  EXPECT_EQ(file_text(path), "{\"step\":1}\n{\"step\":2}\n");
}

// A record that only part fits is cut back off, not left for the next record to follow: a reader
// of lines (pandas) or of framed records (TensorBoard) would refuse everything after it.
TEST(RecordFile, ARefusedRecordIsCutOffAndTheNextOneFollowsTheLastWholeOne) {
  ScratchFolder folder("record-file-refused");
  const auto path = folder.path / "training.log";
  RecordFile file(path.string());
  FileSizeLimit limit;
  ASSERT_FALSE(file.append("first line\n"));
  limit.set(16);  // room for 5 more bytes: half of the next record
  const auto refused = file.append("second line\n");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(*refused, EFBIG);
  EXPECT_EQ(file_text(path), "first line\n");
  EXPECT_EQ(file.size(), 11u);
  limit.lift();
  EXPECT_FALSE(file.append("third line\n"));
  EXPECT_EQ(file_text(path), "first line\nthird line\n");
}

TEST(RecordFile, AFullDiskIsReturnedAsItsReason) {
  RecordFile full("/dev/full");  // every write: ENOSPC
  EXPECT_EQ(full.append("x\n"), ENOSPC);
}

TEST(RecordFile, AFileThatCannotBeOpenedIsAnErrorNamingIt) {
  try {
    RecordFile file("/proc/gputrain-no-such-folder/metrics.jsonl");
    FAIL() << "expected an error";
  } catch (const gputrain::Error& e) {
    EXPECT_TRUE(contains(e.what(), "/proc/gputrain-no-such-folder/metrics.jsonl")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "does not exist")) << e.remedy();
  }
}

// Each reason the system gives gets the fix for that reason, naming the folder to act on.
TEST(WriteError, EachReasonGetsItsOwnFix) {
  using gputrain::core::write_error_remedy;
  const auto full = write_error_remedy(ENOSPC, "/tmp/gputrain-run-never-made/metrics.jsonl");
  EXPECT_TRUE(contains(full, "the disk of '/tmp/gputrain-run-never-made' is full")) << full;
  EXPECT_TRUE(contains(full, "free now")) << full;  // measured on the disk the folder would be on
  EXPECT_TRUE(contains(write_error_remedy(EDQUOT, "/tmp/run/x"), "quota")) << write_error_remedy(EDQUOT, "/tmp/run/x");
  EXPECT_TRUE(contains(write_error_remedy(EFBIG, "/tmp/run/x"), "ulimit -f")) << write_error_remedy(EFBIG, "/tmp/run/x");
  EXPECT_TRUE(contains(write_error_remedy(EROFS, "/mnt/ro/x"), "'/mnt/ro' is on a read-only filesystem"));
  EXPECT_TRUE(contains(write_error_remedy(EACCES, "/data/x"), "may not write in '/data'"));
  EXPECT_TRUE(contains(write_error_remedy(EIO, "/data/x"), "input/output error"));
  EXPECT_TRUE(contains(write_error_remedy(EBADF, "/dev/null"), "'/dev/null' was opened for reading, not writing"));
  EXPECT_TRUE(contains(write_error_remedy(EBUSY, "/data/x"), "exists, is writable and its disk is not full"));
  EXPECT_TRUE(contains(write_error_remedy(ENAMETOOLONG, "/data/x"), "longer than its file system takes"));
  // Too many open files: the limit, not the folder, is what to change.
  EXPECT_TRUE(contains(write_error_remedy(EMFILE, "/data/x"), "`ulimit -n` (")) << write_error_remedy(EMFILE, "/data/x");
  EXPECT_TRUE(contains(write_error_remedy(ENFILE, "/data/x"), "fs.file-max")) << write_error_remedy(ENFILE, "/data/x");
  // "Not a directory": the file standing where a folder would go is named.
  const auto file = std::filesystem::temp_directory_path() / "gputrain-write-error-a-file";
  std::ofstream(file) << "x";
  const auto in_the_way = write_error_remedy(ENOTDIR, (file / "run" / "x.xml").string());
  EXPECT_TRUE(contains(in_the_way, "'" + file.string() + "' is a file, where a folder would go")) << in_the_way;
  std::filesystem::remove(file);
  EXPECT_TRUE(contains(write_error_remedy(ENOTDIR, "/tmp/gputrain-no-such/run/x"), "does not exist and could not be made"));
  const auto error = gputrain::core::write_error("write", "/tmp/run/x", ENOSPC);
  EXPECT_EQ(std::string(error.what()), "cannot write '/tmp/run/x': No space left on device");
  EXPECT_EQ(error.remedy().rfind("the disk of '/tmp/run' is full (", 0), 0u) << error.remedy();
}

// A folder this user may not write in (a run folder a container made as root) is named with its
// owner and mode, and the fix gives the command that lends it to this user. As root, the check
// runs in a child that is `nobody`; otherwise in one that locks its own folder.
TEST(WriteError, AFolderThisUserMayNotWriteInIsNamedWithItsOwnerModeAndTheCommandThatHelps) {
  char made[] = "/tmp/gputrain-unwritable-XXXXXX";  // in /tmp, which `nobody` reaches wherever TMPDIR points
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::filesystem::path scratch(made);
  const auto locked = scratch / "locked";
  std::filesystem::create_directories(locked);
  std::filesystem::permissions(scratch, std::filesystem::perms::all);  // nobody reaches it, but not into locked
  EXPECT_EXIT(
      {
        if (::geteuid() == 0 ? ::setuid(65534) != 0 : ::chmod(locked.c_str(), 0555) != 0) std::_Exit(5);
        try {
          gputrain::core::make_output_folder(locked.string(), "logging.dir");
        } catch (const gputrain::UsageError& e) {
          std::fprintf(stderr, "%s | %s\n", e.what(), e.remedy().c_str());
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(3),
      "logging.dir: this user may not write in '[^']*locked' \\(owned by [^,]+, mode [57]55\\) \\| point logging.dir at another "
      "folder this user can write \\(missing folders are created\\), or (have it made this user's|let its owner write in it)");
  std::filesystem::remove_all(scratch);
}

namespace {

// In a child with a mount namespace of its own: a 64 KiB tmpfs of 8 inodes at `where`, read-only
// when asked, then make_output_folder(`folder`) and its error on stderr (exit 3). Exit 77 where
// this process may not mount (not root, or a container without CAP_SYS_ADMIN).
[[noreturn]] void make_folder_on_small_tmpfs(const std::string& where, const std::string& folder, bool read_only, bool fill) {
  if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=64k,nr_inodes=8") != 0)
    std::_Exit(77);
  for (int i = 0; fill; ++i) fill = std::ofstream(where + "/f" + std::to_string(i)).good();  // till no inode is left
  if (read_only && ::mount(nullptr, where.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) std::_Exit(77);
  try {
    gputrain::core::make_output_folder(folder, "logging.dir");
  } catch (const gputrain::UsageError& e) {
    std::fprintf(stderr, "%s | %s\n", e.what(), e.remedy().c_str());
    std::_Exit(3);
  }
  std::_Exit(4);
}

// Whether a child may mount a tmpfs in a namespace of its own (not in every container).
bool can_mount_tmpfs(const std::string& where) {
  const pid_t child = ::fork();
  if (child == 0)
    std::_Exit(::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                       ::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=64k") == 0
                   ? 0
                   : 77);
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

// A run folder on a volume mounted read-only, or on a disk with no inode left: each named as such,
// with its own fix, rather than as a folder this user may not write in.
TEST(WriteError, AReadOnlyOrFullFilesystemUnderTheRunFolderGetsItsOwnFix) {
  const ScratchFolder scratch("small-tmpfs");
  const auto where = scratch.path.string();
  if (!can_mount_tmpfs(where)) GTEST_SKIP() << "this process may not mount a tmpfs (root with CAP_SYS_ADMIN)";
  EXPECT_EXIT(make_folder_on_small_tmpfs(where, where + "/run", /*read_only=*/true, /*fill=*/false), ::testing::ExitedWithCode(3),
              "logging.dir: '[^']*/run' cannot be created: '[^']*' is on a read-only filesystem \\| point");
  EXPECT_EXIT(make_folder_on_small_tmpfs(where, where + "/run", /*read_only=*/false, /*fill=*/true), ::testing::ExitedWithCode(3),
              "cannot be created: No space left on device \\| the disk of '[^']*' is full \\(.* free now, but no room for one more "
              "file: its inodes are used up");
}

TEST(WriteError, AnOutputFolderThatCannotBeMadeIsAUsageErrorNamingTheKeyAndTheFileInTheWay) {
  using gputrain::core::make_output_folder;
  const ScratchFolder scratch("output-folder");
  const auto made = scratch.path / "run" / "traces";
  make_output_folder(made.string(), "train.profile.dir");
  EXPECT_TRUE(std::filesystem::is_directory(made));
  make_output_folder(made.string(), "train.profile.dir");  // one that exists is left as it is
  const auto later = scratch.path / "later" / "traces";
  gputrain::core::refuse_unmakeable_folder(later.string(), "train.profile.dir");  // checks, makes nothing
  EXPECT_FALSE(std::filesystem::exists(scratch.path / "later"));

  const auto file = scratch.path / "data.csv";
  std::ofstream(file) << "a,label\n";
  try {
    make_output_folder((file / "x").string(), "--junit", /*for_a_file=*/true);
    FAIL() << "a folder under a file was made";
  } catch (const gputrain::UsageError& e) {
    EXPECT_EQ(e.exit_code(), gputrain::ExitCode::usage);
    EXPECT_EQ(std::string(e.what()), "--junit: '" + (file / "x").string() + "' cannot be created: '" + file.string() + "' is a file");
    EXPECT_TRUE(contains(e.remedy(), "point --junit at a file in another folder")) << e.remedy();
  }
  EXPECT_THROW(gputrain::core::refuse_unmakeable_folder((file / "x" / "y").string(), "--trace"), gputrain::UsageError);
  try {
    make_output_folder((file / "x").string(), "logging.dir");
    FAIL() << "a folder under a file was made";
  } catch (const gputrain::UsageError& e) {
    EXPECT_TRUE(contains(e.remedy(), "point logging.dir at another folder (missing folders are created)")) << e.remedy();
  }
  // A device stands in the way as a file does (as root, "may not write in" would not even hold),
  // and is no file to move away (`logging.dir: /dev/null`, to write nothing).
  for (const std::string folder : {"/dev/null/run", "/dev/null"}) {
    try {
      make_output_folder(folder, "logging.dir");
      FAIL() << "a folder at " << folder << " was made";
    } catch (const gputrain::UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "logging.dir: '" + folder + "' cannot be created: '/dev/null' is a device, not a folder");
      EXPECT_FALSE(contains(e.remedy(), "move")) << e.remedy();
      EXPECT_TRUE(contains(e.remedy(), "--set logging.dir=$(mktemp -d)")) << e.remedy();
    }
  }
}

// A run named by its settings past the file system's 255 bytes a name, or a path past PATH_MAX:
// the lengths, and a shorter path as the fix, rather than "File name too long" and another folder.
TEST(WriteError, ANameOrPathTooLongIsSaidWithItsLength) {
  const ScratchFolder scratch("long-names");
  const std::string long_name = "lr=0.001_batch=256_" + std::string(281, 'x');  // 300 bytes
  try {
    gputrain::core::make_output_folder((scratch.path / "runs" / long_name).string(), "logging.dir");
    FAIL() << "a folder of a 300-byte name was made";
  } catch (const gputrain::UsageError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "cannot be created: the name 'lr=0.001_batch=256_xxxxx...' in it is 300 bytes long, over the 255 its "
                         "file system takes"))
        << e.what();
    EXPECT_TRUE(contains(e.remedy(), "give logging.dir a shorter path")) << e.remedy();
  }
  std::string deep = scratch.path.string();
  while (deep.size() < PATH_MAX) deep += "/" + std::string(200, 'd');
  try {
    gputrain::core::refuse_unmakeable_folder(deep, "checkpoint.dir");
    FAIL() << "a path of " << deep.size() << " bytes was taken";
  } catch (const gputrain::UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "bytes long from /, over the system's " + std::to_string(PATH_MAX) + " (PATH_MAX)")) << e.what();
  }
  // An output file's own name (--junit, --trace), before the command's work.
  EXPECT_THROW(gputrain::core::refuse_unwritable_file((scratch.path / (long_name + ".xml")).string(), "--junit"), gputrain::UsageError);
  EXPECT_FALSE(std::filesystem::exists(scratch.path / "runs"));
}

// An atomic write past the file-size limit leaves the old file and says which limit, and how high.
TEST(AtomicFile, AWriteTheSystemRefusesKeepsTheOldFileAndNamesTheReason) {
  ScratchFolder folder("atomic-refused");
  const auto path = (folder.path / "best.pt").string();
  gputrain::core::write_file_atomically(path, "old");
  FileSizeLimit limit;
  limit.set(1024);
  try {
    gputrain::core::write_file_atomically(path, std::string(4096, 'n'));
    FAIL() << "expected an error";
  } catch (const gputrain::Error& e) {
    EXPECT_TRUE(contains(e.what(), "best.pt.partial': File too large")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "ulimit -f")) << e.remedy();
    EXPECT_TRUE(contains(e.remedy(), "now 1.00 KiB")) << e.remedy();
  }
  limit.lift();
  EXPECT_EQ(file_text(path), "old");
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

#include <gtest/gtest.h>

#include <filesystem>

#include "gputrain/core/atomic_file.hpp"
#include "gputrain/core/error.hpp"
#include "support/text_checks.hpp"

using gputrain::test_support::file_text;
namespace fs = std::filesystem;
using gputrain::core::write_file_atomically;

namespace {

fs::path fresh_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST(AtomicFile, WritesAndReplacesCreatingFolders) {
  const auto path = fresh_dir("gputrain-atomic-a") / "sub" / "file.bin";
  write_file_atomically(path.string(), "first");
  EXPECT_EQ(file_text(path), "first");
  write_file_atomically(path.string(), "second");
  EXPECT_EQ(file_text(path), "second");
  EXPECT_FALSE(fs::exists(path.string() + ".partial"));
}

// A writer that dies half-way (as a crash would) leaves the previous file whole.
TEST(AtomicFile, CrashMidWriteLeavesThePreviousFileIntact) {
  const auto path = fresh_dir("gputrain-atomic-b") / "checkpoint.pt";
  write_file_atomically(path.string(), std::string(1 << 20, 'a'));
  EXPECT_THROW(write_file_atomically(path.string(),
                                     [](const std::function<void(std::string_view)>& append) {
                                       append(std::string(1 << 19, 'b'));
                                       throw std::runtime_error("simulated crash");
                                     }),
               std::runtime_error);
  EXPECT_EQ(file_text(path), std::string(1 << 20, 'a'));
  EXPECT_FALSE(fs::exists(path.string() + ".partial"));
}

TEST(AtomicFile, UnwritableFolderIsAnErrorNamingThePath) {
  try {
    write_file_atomically("/proc/gputrain-cannot-write-here/x", "data");
    FAIL() << "expected an error";
  } catch (const gputrain::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/gputrain-cannot-write-here/x"), std::string::npos) << e.what();
  }
}

// --junit /dev/stdout, or a pipe: written through, never replaced by a regular file (as root,
// renaming over /dev/null would succeed).
TEST(AtomicFile, ANamedFileThatIsNoRegularFileIsWrittenThroughNotReplaced) {
  gputrain::core::write_named_file("/dev/null", "<testsuites/>");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_FALSE(fs::exists("/dev/null.partial"));
  try {
    gputrain::core::write_named_file("/dev/full", "<testsuites/>");
    FAIL() << "expected an error";
  } catch (const gputrain::Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write '/dev/full': No space left on device");
  }
  const auto path = fresh_dir("gputrain-atomic-named") / "reports" / "verify.xml";
  gputrain::core::write_named_file(path.string(), "<testsuites/>");
  EXPECT_EQ(file_text(path), "<testsuites/>");
}

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "device/shared_library.hpp"  // private: the dlopen wrapper behind --version and verify

namespace fs = std::filesystem;
using gputrain::device::SharedLibrary;

// --version and verify print where each CUDA library was loaded from. The loader keeps the path it
// was given (RUNPATH's torch/lib/../.., a symlinked venv folder), so the same folder could print two
// ways: the path shown is the file itself.
TEST(SharedLibrary, PathIsTheFileItselfWhateverWayItWasReached) {
  Dl_info libc{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&std::puts), &libc), 0);
  const fs::path system_dir = fs::canonical(libc.dli_fname).parent_path();
  if (!fs::exists(system_dir / "libanl.so.1")) GTEST_SKIP() << "no libanl.so.1 beside " << libc.dli_fname;
  const fs::path root = fs::temp_directory_path() / "gputrain-shared-library";
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  fs::create_directory_symlink(system_dir, root / "linked");
  const SharedLibrary library((root / "sub" / ".." / "linked" / "libanl.so.1").string(), SharedLibrary::Mode::load);
  ASSERT_TRUE(library.is_open()) << library.error();
  EXPECT_EQ(library.path(), (system_dir / "libanl.so.1").string());
  fs::remove_all(root);
}

TEST(SharedLibrary, AMissingLibrarySaysWhy) {
  const SharedLibrary library("libgputrain-no-such-library.so.1", SharedLibrary::Mode::load);
  EXPECT_FALSE(library.is_open());
  EXPECT_NE(library.error().find("libgputrain-no-such-library.so.1"), std::string::npos) << library.error();
  EXPECT_EQ(library.path(), "");
}

// The tests' paths (support/test_paths.hpp) name this checkout and its build.

#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using namespace gputrain::test_support;

TEST(TestPaths, NameTheCheckoutAndItsTestData) {
  EXPECT_TRUE(fs::exists(fs::path(source_dir()) / "cmake" / "GputrainUnity.cmake")) << source_dir();
  EXPECT_EQ(fs::path(test_data_dir()), fs::path(source_dir()) / "tests" / "data");
  EXPECT_TRUE(fs::is_directory(fs::path(test_data_dir()) / "configs")) << test_data_dir();
}

TEST(TestPaths, PutTheFixturesAndScratchFolderInTheBuild) {
  const auto tests_build = fs::path(test_tmpdir()).parent_path();
  EXPECT_EQ(fs::path(test_tmpdir()).filename(), "tmp");
  EXPECT_EQ(fs::path(format_fixtures_dir()), tests_build / "format-fixtures");
  EXPECT_TRUE(fs::exists(tests_build / "CTestTestfile.cmake")) << tests_build;
}

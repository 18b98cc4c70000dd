#include <gtest/gtest.h>

#include "gputrain/device/os_release.hpp"
#include "support/test_paths.hpp"

using namespace gputrain::device;

TEST(OsRelease, ParsesQuotedAndUnquotedValues) {
  const auto r = parse_os_release(
      "# comment\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n"
      "VERSION_ID=\"12\"\nID=debian\n");
  EXPECT_EQ(r.id, "debian");
  EXPECT_EQ(r.version_id, "12");
  EXPECT_EQ(r.pretty_name, "Debian GNU/Linux 12 (bookworm)");
}

TEST(OsRelease, HandlesSingleQuotesEscapesAndJunkLines) {
  const auto r = parse_os_release("ID='ubuntu'\nnot a key value line\nPRETTY_NAME=\"Say \\\"hi\\\"\"\nVERSION_ID=24.04");
  EXPECT_EQ(r.id, "ubuntu");
  EXPECT_EQ(r.version_id, "24.04");
  EXPECT_EQ(r.pretty_name, "Say \"hi\"");
}

TEST(OsRelease, ReadsTheFixtureTreeAndFallsBackToUsrLib) {
  const auto debian = read_os_release(std::string(gputrain::test_support::test_data_dir()) + "/os/debian");
  EXPECT_EQ(debian.id, "debian");
  const auto fallback = read_os_release(std::string(gputrain::test_support::test_data_dir()) + "/os/usr_lib_only");
  EXPECT_EQ(fallback.id, "ubuntu");
  EXPECT_TRUE(read_os_release("/nonexistent-root").id.empty());
}

#include "support/test_paths.hpp"

namespace gputrain::test_support {

std::string source_dir() { return GPUTRAIN_SOURCE_DIR; }
std::string test_data_dir() { return GPUTRAIN_TEST_DATA; }
std::string format_fixtures_dir() { return GPUTRAIN_FORMAT_FIXTURES; }
std::string format_fixture(const std::string& name) { return format_fixtures_dir() + "/" + name; }
std::string test_tmpdir() { return GPUTRAIN_TEST_TMPDIR; }

}  // namespace gputrain::test_support

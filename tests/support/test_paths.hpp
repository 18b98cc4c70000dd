#pragma once
// Where the tests find the checkout, their data and the build's folders. Only test_paths.cpp is
// compiled with these paths: every other test object is then the same in every clone, so a
// fresh clone's build finds it in ccache.

#include <string>

namespace gputrain::test_support {

std::string source_dir();                             ///< the checkout's top folder
std::string test_data_dir();                          ///< tests/data
std::string format_fixtures_dir();                    ///< the files data.make_format_fixtures writes into the build
std::string format_fixture(const std::string& name);  ///< one of them, by its path under that folder
std::string test_tmpdir();                            ///< the build's scratch folder for tests (their TMPDIR)

}  // namespace gputrain::test_support

// Broken and hostile YAML: every case is an exit-2 error with a fix, never a crash (#52).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/train/config.hpp"
#include "support/scratch_folder.hpp"

using namespace gputrain;

namespace {

// "error: ...\n  fix: ..." of loading the config `text`; fails the test if it loads.
std::string error_of_text(const std::string& text, const std::vector<std::string>& overrides = {}) {
  test_support::ScratchFolder folder("yaml-hints");
  const auto path = (folder.path / "config.yaml").string();
  std::ofstream(path, std::ios::binary) << text;
  try {
    train::load_config({{path}, overrides, ""});
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::usage);
    return std::string(e.what()) + "\n  fix: " + e.remedy();
  }
  ADD_FAILURE() << "the config loaded";
  return "";
}

std::string repeated(const std::string& piece, int times) {
  std::string text;
  for (int n = 0; n < times; ++n) text += piece;
  return text;
}

}  // namespace

// A 5,000-name list missing its ']' once overflowed std::regex's stack in the hint (SIGSEGV).
TEST(YamlHints, ALongListMissingItsBracketNamesWhereItOpened) {
  std::string names;
  for (int n = 0; n < 5000; ++n) names += (n ? "," : "") + std::string("feature_") + std::to_string(n);
  const auto message = error_of_text("model:\n  name: mlp\ndata:\n  features: [" + names + "\ntrain:\n  epochs: 1\n");
  EXPECT_NE(message.find("not valid YAML: end of sequence flow not found"), std::string::npos) << message.substr(0, 300);
  EXPECT_NE(message.find("fix: the '[' at line 4, column 13 is never closed: end the list with ']'"), std::string::npos)
      << message.substr(0, 300);
}

TEST(YamlHints, AnUnclosedMappingIsNamedAndQuotedBracesDoNotCount) {
  const auto message = error_of_text("model:\n  name: mlp\ndata:\n  features: {a: 1, b: \"x}y\" # }\ntrain:\n  epochs: 1\n");
  EXPECT_NE(message.find("fix: the '{' at line 4, column 13 is never closed: end the mapping with '}'"), std::string::npos) << message;
}

// yaml-cpp stops at 500 levels and calls it "bad file"; valid YAML that deep gets the same bound.
TEST(YamlHints, DeepNestingIsBoundedWithAClearError) {
  for (const int depth : {600, 20000}) {
    const auto message = error_of_text("x-deep: " + repeated("[", depth) + repeated("]", depth) + "\nmodel:\n  name: mlp\n");
    EXPECT_NE(message.find("lists or mappings are nested more than 499 deep"), std::string::npos) << depth << ": " << message;
    EXPECT_EQ(message.find("bad file"), std::string::npos) << message;
  }
}

// The indentation hint reads a bounded window: a huge misaligned line gets the general fix.
TEST(YamlHints, AHugeMisalignedLineGetsTheGeneralFix) {
  const auto message = error_of_text("train:\n  epochs: 3\n   batch_size: " + repeated("9", 100000) + "\n");
  EXPECT_NE(message.find("fix: fix the YAML syntax at that line"), std::string::npos) << message.substr(0, 300);
}

TEST(YamlHints, AHugeDeviceNameIsRejectedWithoutRecursion) {
  const auto message = error_of_text("", {"device=cuda:" + repeated("1", 200000) + "x"});
  EXPECT_NE(message.find("allowed: auto, cpu, cuda or cuda:N"), std::string::npos) << message.substr(0, 200);
  EXPECT_NE(error_of_text("", {"device=cuda1"}).find("; did you mean 'cuda:1'?"), std::string::npos);
  EXPECT_NE(error_of_text("", {"device=CUDA"}).find("; did you mean 'cuda'?"), std::string::npos);
}

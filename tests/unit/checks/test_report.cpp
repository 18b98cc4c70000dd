#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gputrain/checks/report.hpp"

using namespace gputrain::checks;
using nlohmann::json;

namespace {
std::vector<Outcome> sample() {
  return {
      {"system.cores", "system", "usable CPU cores", pass("16 usable", {{"usable_cores", 16, "cores", {}}}), 0.01},
      {"gpu.count", "gpu", "usable GPUs", fail("no usable CUDA GPU", "install the driver"), 0.02},
      {"gpu.0.ecc", "gpu", "ECC <errors> & \"more\"", warn("2 errors", "reset it"), 0.0},
      {"libraries.nccl", "libraries", "NCCL", skip("not probed"), 0.0},
      {"performance.0.matmul_fp32", "performance", "fp32", Result{Status::timeout, "no answer", "reset", {}}, 5.0},
  };
}
}  // namespace

TEST(Report, TallyCountsEveryStatus) {
  const Tally t = tally(sample());
  EXPECT_EQ(t.pass, 1);
  EXPECT_EQ(t.fail, 1);
  EXPECT_EQ(t.warn, 1);
  EXPECT_EQ(t.skip, 1);
  EXPECT_EQ(t.timeout, 1);
}

TEST(Report, JsonFollowsTheDocumentedSchema) {
  Context context;
  context.allow_cpu = true;
  const json doc = json::parse(to_json(context, sample(), 1.5, 1));
  EXPECT_EQ(doc.at("schema_version"), kVerifySchemaVersion);
  EXPECT_EQ(doc.at("exit_code"), 1);
  EXPECT_EQ(doc.at("level"), "quick");
  EXPECT_EQ(doc.at("summary").at("status"), "fail");
  EXPECT_EQ(doc.at("summary").at("timeout"), 1);
  for (const char* key : {"tool", "gputrain_version", "duration_s", "system", "driver", "gpus", "gpu_notes", "libraries", "libtorch",
                          "checks", "allow_cpu"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  const auto& first = doc.at("checks").at(0);
  for (const char* key : {"id", "area", "title", "status", "detail", "remedy", "duration_s", "figures"}) {
    EXPECT_TRUE(first.contains(key)) << key;
  }
  EXPECT_EQ(first.at("figures").at(0).at("name"), "usable_cores");
  EXPECT_TRUE(first.at("figures").at(0).at("expected").is_null());
  EXPECT_EQ(doc.at("checks").at(4).at("status"), "timeout");
}

TEST(Report, JunitHasOneSuitePerAreaAndEscapesText) {
  const std::string xml = to_junit(sample(), 2.0);
  EXPECT_NE(xml.find("<testsuites name=\"gputrain verify\" tests=\"5\" failures=\"2\" skipped=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("<testsuite name=\"gpu\" tests=\"2\" failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"fail\" message=\"no usable CUDA GPU\">fix: install the driver</failure>"), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"timeout\""), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"not probed\"/>"), std::string::npos);
  EXPECT_EQ(xml.find("<errors>"), std::string::npos);
  const std::string latin1 = to_junit({{"a.b", "a", "t", fail("no '/data/caf\xE9'", "fix"), 0.0}}, 1.0);  // not UTF-8
  EXPECT_NE(latin1.find("message=\"no &apos;/data/caf\xC3\xA9&apos;\""), std::string::npos) << latin1;
}

TEST(Report, TextShowsTheFixUnderProblemsOnly) {
  std::ostringstream out;
  for (const auto& o : sample()) write_outcome(out, o, false);
  const std::string text = out.str();
  EXPECT_NE(text.find("[FAIL] usable GPUs: no usable CUDA GPU\n         fix: install the driver"), std::string::npos);
  EXPECT_NE(text.find("[ok  ] usable CPU cores: 16 usable\n  ["), std::string::npos);
  EXPECT_EQ(summary_line(sample(), 1.234, 1), "verify: 1 pass, 1 warn, 1 fail, 1 skip, 1 timeout in 1.23 s -> exit 1");
}

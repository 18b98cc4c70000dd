// Files that stand in for the one a run needs: a clone made without git-lfs leaves three-line
// pointers, and a download can save the web page it got under the file's name. Each reader names
// such a file for what it is, with the fix, instead of calling it a malformed array, CSV,
// checkpoint or image.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "data/image_decode.hpp"
#include "data/stand_in_file.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/checkpoint.hpp"
#include "support/scratch_folder.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

std::string pointer(const std::string& size) {
  return "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize " +
         size + "\n";
}

// Hugging Face's answer to a file it does not have, as wget saves it.
const std::string kNotFoundPage = "\n<!DOCTYPE html>\n<html class=\"\">\n<head>\n<title>404 &ndash; Hugging Face</title></head><body>" +
                                  std::string(2000, ' ') + "</body></html>\n";

// Every reader given `content` under each name throws a UsageError that names the file as `what`.
void expect_every_reader_names(const std::string& content, const std::string& what, const std::string& fix) {
  test_support::ScratchFolder scratch("stand-in-files");
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers{
      {"x.npy", [](const std::string& p) { read_npy(p); }},
      {"d.npz", [](const std::string& p) { read_npz(p); }},
      {"w.safetensors", [](const std::string& p) { read_safetensors(p); }},
      {"data.csv",
       [](const std::string& p) {
         read_csv(p, CsvSpec{{}, {"label"}, true});
       }},
      {"step-00000100.pt", [](const std::string& p) { train::checkpoint_progress(p); }},
  };
  for (const auto& [name, read] : readers) {
    const auto path = (scratch.path / name).string();
    std::ofstream(path, std::ios::binary) << content;
    const auto error = test_support::usage_error_and_fix([&] { read(path); });
    EXPECT_NE(error.find("'" + path + "' is " + what + ", not the file itself"), std::string::npos) << error;
    EXPECT_NE(error.find(fix), std::string::npos) << error;
  }
}

std::string skip_reason(const std::string& bytes, std::string* fix = nullptr) {
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
  } catch (const SkippedSample& e) {
    if (fix) *fix = e.fix();
    return e.what();
  }
  ADD_FAILURE() << "decoded as an image: " << bytes.substr(0, 40);
  return "";
}

}  // namespace

TEST(StandInFiles, APointerOrAPageIsToldFromDataThatStartsAlike) {
  ASSERT_TRUE(stand_in(pointer("48213")).has_value());
  EXPECT_EQ(stand_in(pointer("48213"))->what, "a Git LFS pointer (130 bytes) standing in for a 47.08 KiB file");
  EXPECT_TRUE(stand_in("version https://hawser.github.com/spec/v1\noid sha256:ab\nsize 10\n").has_value());  // git-lfs < 1.0
  EXPECT_EQ(stand_in("version https://git-lfs.github.com/spec/v1\n")->what, "a Git LFS pointer (43 bytes) standing in for the file");
  EXPECT_FALSE(stand_in(pointer("1") + std::string(1024, 'x')).has_value());  // past any pointer's size
  EXPECT_EQ(stand_in(kNotFoundPage.substr(0, kStandInHeadBytes))->what, "a web page ('404 \u2013 Hugging Face')");
  EXPECT_TRUE(stand_in("\xEF\xBB\xBF<HTML><body>Sign in</body>").has_value());
  // Data that holds markup, or a 'version' column, is data.
  EXPECT_FALSE(stand_in("version,label\n1,0\n").has_value());
  EXPECT_FALSE(stand_in("text,label\n<html><h1>a page</h1></html>,1\n").has_value());
  EXPECT_FALSE(stand_in("").has_value());
}

TEST(StandInFiles, EveryReaderNamesAPointerWithGitLfsPull) {
  expect_every_reader_names(pointer("9000000"), "a Git LFS pointer (132 bytes) standing in for a 8.58 MiB file",
                            "git lfs install && git lfs pull");
}

TEST(StandInFiles, EveryReaderNamesAWebPageWithTheDownloadToMake) {
  expect_every_reader_names(kNotFoundPage, "a web page ('404 \u2013 Hugging Face')", "link with /resolve/ in place of /blob/");
}

// An image folder of pointers or pages: each image is a skipped sample whose reason says what it
// is, and whose fix a run with none readable gives.
TEST(StandInFiles, AnImageThatIsAPointerOrAPageIsSkippedAsOne) {
  std::string fix;
  EXPECT_EQ(
      skip_reason(pointer("4000"), &fix),
      "a Git LFS pointer (129 bytes) standing in for a 3.91 KiB file, not the image: the repository was cloned or pulled without git-lfs");
  EXPECT_NE(fix.find("git lfs pull"), std::string::npos) << fix;
  EXPECT_EQ(
      skip_reason("<!doctype html><title>Access Denied</title>").rfind("a web page ('Access Denied'), not the image: a download saved", 0),
      0u);
  EXPECT_EQ(skip_reason("GIF89a", &fix), "neither a JPEG nor a PNG (unknown signature)");
  EXPECT_EQ(fix, "");
}

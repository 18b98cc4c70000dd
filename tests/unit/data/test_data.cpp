#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/synthetic_teacher.hpp"  // private: what the labels depend on
#include "gputrain/core/error.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/sources.hpp"
#include "gputrain/data/tensor_dataset.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;

TEST(Synthetic, IsReproducibleAndSplitsShareTheTeacher) {
  SyntheticSpec spec{"classification", {3, 8, 8}, 5, 11};
  const auto a = make_synthetic(spec, 64, 0), b = make_synthetic(spec, 64, 0), v = make_synthetic(spec, 32, 1);
  EXPECT_TRUE(at::equal(a.inputs, b.inputs));
  EXPECT_TRUE(at::equal(a.targets, b.targets));
  EXPECT_FALSE(at::equal(a.inputs.slice(0, 0, 32), v.inputs));
  EXPECT_EQ(a.inputs.sizes(), (std::vector<std::int64_t>{64, 3, 8, 8}));
  EXPECT_EQ(a.targets.scalar_type(), at::kLong);
  EXPECT_GE(a.targets.min().item<std::int64_t>(), 0);
  EXPECT_LT(a.targets.max().item<std::int64_t>(), 5);
}

// The inputs are drawn in blocks of kNormalBlockValues values, each from a generator of its own,
// in parallel: the values are each block's at::randn, whatever the thread count (what
// bench/train_vs_pytorch.py rebuilds in Python), and progress comes in whole samples.
namespace {

at::Tensor drawn_block_by_block(const std::vector<std::int64_t>& shape, std::uint64_t seed) {
  auto expected = at::empty(shape, at::kFloat);
  auto flat = expected.view({expected.numel()});
  for (std::int64_t start = 0, j = 0; start < flat.numel(); start += kNormalBlockValues, ++j) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(block_seed(seed, j));
    flat.narrow(0, start, std::min(kNormalBlockValues, flat.numel() - start)).normal_(0.0, 1.0, gen);
  }
  return expected;
}

}  // namespace

TEST(Synthetic, BlocksAreDrawnFromSeedsOfTheirOwnWhateverTheThreadCount) {
  const int threads = at::get_num_threads();
  // A few values, a block and a sample more, two and a half blocks (the last one short).
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{5, 3}, {1, 1}, {4097, 1024}, {10, 1048576}}) {
    const auto expected = drawn_block_by_block(shape, 12);
    for (const int n : {1, 2, 3}) {
      at::set_num_threads(n);
      auto drawn = at::empty(shape, at::kFloat);
      std::vector<std::int64_t> told;
      fill_standard_normal(drawn, 12, [&](std::int64_t done) { told.push_back(done); });
      EXPECT_TRUE(at::equal(drawn, expected)) << "shape " << c10::IntArrayRef(shape) << ", " << n << " threads";
      ASSERT_FALSE(told.empty());
      EXPECT_TRUE(std::is_sorted(told.begin(), told.end()));
      EXPECT_EQ(told.back(), shape[0]);
    }
  }
  at::set_num_threads(threads);
  // Neighbouring blocks, and the same block of neighbouring seeds, draw apart; a set of one block
  // is at::randn's draw from the seed itself, as every set was before the blocks.
  EXPECT_NE(block_seed(12, 1), block_seed(12, 2));
  EXPECT_NE(block_seed(12, 1), block_seed(13, 1));
  EXPECT_NE(block_seed(12, 1), 13u);
  EXPECT_EQ(block_seed(12, 0), 12u);
  // make_synthetic tells its progress: the samples drawn, then the samples labelled.
  std::vector<std::string> doing;
  const auto set =
      make_synthetic({"classification", {3, 8, 8}, 5, 11}, 64, 0, [&](const std::string& what, std::int64_t done, std::int64_t total) {
        EXPECT_EQ(total, 64);
        if (done == total) doing.push_back(what);
      });
  EXPECT_EQ(doing, (std::vector<std::string>{"generating", "labelling"}));
  EXPECT_TRUE(at::equal(set.inputs, drawn_block_by_block({64, 3, 8, 8}, 11 + 1)));
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(11 + 1);
  EXPECT_TRUE(at::equal(set.inputs, at::randn({64, 3, 8, 8}, gen)));
}

TEST(Synthetic, RegressionTargetsHaveOneColumnPerOutput) {
  const auto set = make_synthetic({"regression", {6}, 3, 1}, 10, 0);
  EXPECT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 3}));
  EXPECT_EQ(set.targets.scalar_type(), at::kFloat);
}

// Every class occurs and regression targets are about standard normal, for every kind of sample.
// Images and sequences (per-class offsets set on a reference set) give every class an even share
// up to sampling noise, also one-channel images whose size is no multiple of 16 (whose features
// are strongly correlated); vectors keep a plain random map, which favours some classes.
TEST(Synthetic, ClassSharesAndTargetScaleForEveryKindOfSample) {
  struct Case {
    std::vector<std::int64_t> shape;
    double min_share, max_share;  // of an even share
  };
  for (const auto& c : std::vector<Case>{
           {{32}, 0.1, 3.0}, {{3, 16, 16}, 0.7, 1.3}, {{1, 28, 28}, 0.7, 1.3}, {{12, 8}, 0.7, 1.3}, {{1, 4, 4, 4}, 0.7, 1.3}}) {
    const auto labels = make_synthetic({"classification", c.shape, 10, 7}, 4000, 0).targets;
    const auto counts = at::bincount(labels, {}, 10);
    EXPECT_GE(counts.min().item<std::int64_t>(), c.min_share * 400) << "shape of rank " << c.shape.size() << ": " << counts;
    EXPECT_LE(counts.max().item<std::int64_t>(), c.max_share * 400) << "shape of rank " << c.shape.size() << ": " << counts;
    const auto targets = make_synthetic({"regression", c.shape, 4, 7}, 4000, 0).targets;
    EXPECT_NEAR(targets.mean().item<double>(), 0.0, 0.1) << "rank " << c.shape.size();
    EXPECT_NEAR(targets.std().item<double>(), 1.0, 0.35) << "rank " << c.shape.size();  // the features correlate
  }
}

// What lets a transformer and a CNN that pool over positions learn the task: a sequence's target
// does not depend on the order of its steps, and an image's does not depend on where its content
// sits (exactly so for content on a zero background, which a shift leaves unchanged).
TEST(Synthetic, TargetsDoNotDependOnStepOrderOrWhereImageContentSits) {
  const SyntheticTeacher sequences({"regression", {6, 5}, 3, 9});
  const auto steps = at::randn({50, 6, 5});
  EXPECT_TRUE(at::allclose(sequences.targets(steps), sequences.targets(steps.flip(1)), 1e-5, 1e-5));

  const SyntheticTeacher images({"regression", {3, 16, 16}, 3, 9});
  const auto content = at::randn({20, 3, 6, 6});
  auto top_left = at::zeros({20, 3, 16, 16}), bottom_right = at::zeros({20, 3, 16, 16});
  // Two pixels from every edge, so every 3x3 patch that overlaps the content exists in both.
  top_left.narrow(2, 2, 6).narrow(3, 2, 6).copy_(content);
  bottom_right.narrow(2, 8, 6).narrow(3, 7, 6).copy_(content);
  EXPECT_TRUE(at::allclose(images.targets(top_left), images.targets(bottom_right), 1e-5, 1e-5));
  // ...while the content itself matters.
  EXPECT_FALSE(at::allclose(images.targets(top_left), images.targets(top_left.flip(0)), 1e-3, 1e-3));
}

TEST(Synthetic, DatasetsAreLabelledByTheTeacherOfTheirSeed) {
  const SyntheticSpec spec{"classification", {3, 8, 8}, 5, 11};
  const auto set = make_synthetic(spec, 64, 1);
  EXPECT_TRUE(at::equal(SyntheticTeacher(spec).targets(set.inputs), set.targets));
  EXPECT_FALSE(at::equal(SyntheticTeacher({"classification", {3, 8, 8}, 5, 12}).targets(set.inputs), set.targets));
}

// The per-class offsets are balanced on 4096 reference samples while each class can get a share
// of them; past that (a sweep's data.classes=1e6 took minutes in 200 rounds of 4096 x 1e6 logits,
// deaf to SIGTERM) the classes are the argmax of the same teacher's logits, its regression targets.
TEST(Synthetic, ClassesPastTheReferenceSamplesAreTheArgmaxOfTheLogitsWithoutOffsets) {
  // Seeded: of 40 unseeded samples, the offsets moved none about one run in five.
  const auto inputs = at::randn({256, 3, 8, 8}, at::make_generator<at::CPUGeneratorImpl>(4));
  const auto labels = [&](std::int64_t classes) {
    const auto classified = SyntheticTeacher({"classification", {3, 8, 8}, classes, 4}).targets(inputs);
    const auto argmax = SyntheticTeacher({"regression", {3, 8, 8}, classes, 4}).targets(inputs).argmax(1);
    return std::pair{classified, argmax};
  };
  const auto [many, many_argmax] = labels(5000);
  EXPECT_TRUE(at::equal(many, many_argmax));
  const auto [few, few_argmax] = labels(4);  // balanced: the offsets move some samples to another class
  EXPECT_FALSE(at::equal(few, few_argmax));
}

// Synthetic samples are made in RAM at once: more than any machine has (120 TB here) is refused
// before the allocation, with the bytes and a data.samples that fits.
TEST(Synthetic, MoreSamplesThanRamHoldsAreRefusedBeforeTheyAreMade) {
  SourceSpec spec;
  spec.source = "synthetic";
  spec.synthetic = {"classification", {3, 1024, 1024}, 10, 1};
  spec.samples = 10'000'000;
  const auto error = test_support::usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("synthetic data of 10000000 samples shaped [3, 1024, 1024] in 10 classes takes 114.44 TiB in RAM to make"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("\nlower data.samples (and data.val_samples) to about "), std::string::npos) << error;
}

// The teacher's logits take a float per class and sample, and its reference set 4096 samples as
// it sees them: a data.classes or a sequence too large for RAM is refused by name, not by the
// allocator (both reached the console as "DefaultCPUAllocator: can't allocate memory").
TEST(Synthetic, ATeacherLargerThanRamIsRefusedNamingWhatToMakeSmaller) {
  SourceSpec spec;
  spec.source = "synthetic";
  spec.samples = 64;
  spec.val_samples = 16;
  // A sample and its logits take 8 MB, the teacher's map 4 TB: on any machine between.
  spec.synthetic = {"classification", {1'000'000}, 1'000'000, 1};
  auto error = test_support::usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("in 1000000 classes takes "), std::string::npos) << error;
  EXPECT_NE(error.find("\nthe teacher that labels the synthetic task takes "), std::string::npos) << error;
  EXPECT_NE(error.find(": fewer data.classes"), std::string::npos) << error;
  spec.synthetic = {"classification", {100'000, 1024}, 4, 1};  // 410 MB a sample; the teacher's 4096 of them do not fit
  error = test_support::usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find(" for its 4096 reference samples: make data.shape smaller"), std::string::npos) << error;
}

TEST(Synthetic, MemoryCountsTheSamplesTheLogitsAndTheTeacher) {
  const auto images = synthetic_memory({"classification", {3, 32, 32}, 10, 1});
  EXPECT_EQ(images.per_sample, 4.0 * 3 * 32 * 32 + 8);
  EXPECT_EQ(images.labelling_per_sample, 4.0 * 10);
  EXPECT_EQ(images.reference, 4.0 * 4096 * 3 * 16 * 16);  // 32x32 in 2x2 cells
  EXPECT_EQ(images.teacher, 4.0 * 16 * 10 + images.reference + 4.0 * 4096 * 10);
  // Past 4096 classes the offsets are not balanced on the reference set: no reference logits.
  const auto many = synthetic_memory({"classification", {3, 32, 32}, 5000, 1});
  EXPECT_EQ(many.teacher, 4.0 * 16 * 5000 + many.reference);
  const auto vectors = synthetic_memory({"regression", {256}, 3, 1});
  EXPECT_EQ(vectors.per_sample, 4.0 * 256 + 4 * 3);
  EXPECT_EQ(vectors.labelling_per_sample, 0);
  EXPECT_EQ(vectors.teacher, 4.0 * 256 * 3);
}

// The class balancing's argmax, without the difference tensor: ATen's indices, ties (the first)
// and NaN (the first) included.
TEST(Synthetic, ArgmaxLessOffsetsIsAtensArgmaxOfTheDifference) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  for (const std::int64_t classes : {1, 7, 1000}) {
    auto logits = at::randn({1100, classes}, gen).round();  // whole numbers: many equal maxima; 1000 classes: on threads
    const auto offsets = at::randn({classes}, gen).round();
    logits[5][classes / 2] = std::nanf("");
    logits[6][0] = std::nanf("");
    EXPECT_TRUE(at::equal(argmax_less_offsets(logits, offsets), (logits - offsets).argmax(1))) << classes << " classes";
  }
}

TEST(EpochSampler, ShufflesPerEpochReproducibly) {
  EpochSampler sampler(100, true, 3);
  EXPECT_TRUE(at::equal(sampler.order(0), sampler.order(0)));
  EXPECT_FALSE(at::equal(sampler.order(0), sampler.order(1)));
  EXPECT_TRUE(at::equal(std::get<0>(sampler.order(2).sort()), at::arange(100, at::kLong)));
  EXPECT_TRUE(at::equal(EpochSampler(10, false, 3).order(5), at::arange(10, at::kLong)));
}

TEST(Safetensors, RoundTripsEveryDtype) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-roundtrip.safetensors").string();
  std::vector<std::pair<std::string, at::Tensor>> tensors{
      {"f32", at::randn({2, 3})},        {"f16", at::randn({5}).to(at::kHalf)}, {"bf16", at::randn({1, 1, 2}).to(at::kBFloat16)},
      {"i64", at::arange(7, at::kLong)}, {"u8", at::arange(3, at::kByte)},      {"b", at::ones({2}, at::kBool)},
      {"scalar", at::full({}, 3.5)},     {"strided", at::randn({4, 4}).t()}};
  write_safetensors(path, tensors, {{"format", "pt"}});
  const auto back = read_safetensors(path);
  ASSERT_EQ(back.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(back[i].first, tensors[i].first);
    EXPECT_TRUE(at::equal(back[i].second, tensors[i].second)) << tensors[i].first;
  }
}

// The first 9 bytes tell weights from a config given in their place.
TEST(Safetensors, StartsLikeSafetensorsReadsTheHeaderLengthAndBrace) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto weights = (dir / "gputrain-starts-like.safetensors").string(), text = (dir / "gputrain-starts-like.yaml").string();
  write_safetensors(weights, {{"w", at::ones({2})}});
  std::ofstream(text) << "train:\n  epochs: 3\n";
  EXPECT_TRUE(starts_like_safetensors(weights));
  EXPECT_FALSE(starts_like_safetensors(text));
  EXPECT_FALSE(starts_like_safetensors((dir / "gputrain-no-such.safetensors").string()));
  std::filesystem::remove(weights);
  std::filesystem::remove(text);
}

// Two float32 tensors of 2 values at the given byte ranges over `data_bytes` bytes of data.
std::string two_tensor_file(std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1, std::size_t data_bytes) {
  const std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + std::to_string(a0) + "," + std::to_string(a1) +
                             "]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + std::to_string(b0) + "," +
                             std::to_string(b1) + "]}}";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

// Python's safetensors refuses tensors whose bytes overlap, leave a gap or stop short of the
// data's end; so does gputrain, naming which (it trained on such files silently).
TEST(Safetensors, OverlapsGapsAndTrailingBytesAreRefusedAsPythonRefusesThem) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-tiling.safetensors").string();
  const auto message_of = [&](const std::string& bytes) -> std::string {
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      read_safetensors(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message_of(two_tensor_file(0, 8, 8, 16, 16)), "");  // the tensors tile the data
  EXPECT_EQ(message_of(two_tensor_file(8, 16, 0, 8, 16)), "");  // in any header order
  EXPECT_NE(message_of(two_tensor_file(0, 8, 4, 12, 12)).find("tensor 'b''s bytes [4, 12) overlap tensor 'a''s [0, 8)"), std::string::npos);
  EXPECT_NE(message_of(two_tensor_file(0, 8, 12, 20, 20)).find("a gap of 4 bytes before tensor 'b'"), std::string::npos);
  EXPECT_NE(message_of(two_tensor_file(0, 8, 8, 16, 20)).find("4 bytes after the last tensor's data"), std::string::npos);
}

TEST(Safetensors, MalformedFilesAreUsageErrors) {
  EXPECT_THROW(read_safetensors("/no/such/file.safetensors"), UsageError);
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-bad.safetensors").string();
  std::ofstream(path) << "not a safetensors file at all";
  EXPECT_THROW(read_safetensors(path), UsageError);
}

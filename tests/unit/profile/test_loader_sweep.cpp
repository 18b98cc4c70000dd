// The sweep's timing: every timed batch must be made while the clock runs.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "gputrain/data/dataset.hpp"
#include "gputrain/profile/loader_sweep.hpp"

using namespace gputrain;

namespace {

// Each sample takes at least `kSampleTime` to read, so no loader setting can deliver batches
// faster than threads / (batch x kSampleTime).
constexpr auto kSampleTime = std::chrono::milliseconds(1);

class SlowSamples final : public data::Dataset {
 public:
  explicit SlowSamples(std::int64_t n) : n_(n) {
    layout_.input_shape = {4};
    layout_.input_dtype = at::kFloat;
  }
  std::int64_t size() const override { return n_; }
  const data::SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t i, void* input, void* target) const override {
    std::this_thread::sleep_for(kSampleTime);
    auto* x = static_cast<float*>(input);
    for (int k = 0; k < 4; ++k) x[k] = static_cast<float>(i);
    *static_cast<std::int64_t*>(target) = i % 2;
  }
  std::string origin(std::int64_t i) const override { return "slow/" + std::to_string(i); }
  std::string description() const override { return "slow samples"; }

 private:
  std::int64_t n_;
  data::SampleLayout layout_;
};

}  // namespace

// A timed batch must be made while the clock runs: a sweep that counted batches its threads had
// made before would read faster than the threads can possibly read the samples.
TEST(LoaderSweep, NoSettingIsTimedFasterThanItsThreadsCanReadTheSamples) {
  profile::SweepOptions options;
  options.workers = {2};
  options.prefetch = {4};
  options.batch_size = 8;
  options.batches = 12;
  options.repeats = 5;
  const auto sweep = profile::sweep_loader(std::make_shared<SlowSamples>(40), at::Device(at::kCPU), options);
  const double seconds_per_batch = std::chrono::duration<double>(kSampleTime).count() * options.batch_size;
  for (const auto& result : sweep.results) {
    const int threads = std::max(1, result.setting.workers);
    // Threads finish their batches together, so a window of N batches may open on one that is
    // already done: at most N / (N - threads + 1) of the threads' rate, and 2 % for the clock.
    const double ceiling = threads / seconds_per_batch * options.batches / (options.batches - threads + 1) * 1.02;
    for (const double rate : result.batches_per_second)
      EXPECT_LE(rate, ceiling) << threads << " threads, prefetch " << result.setting.prefetch;
  }
}

// A set smaller than the batch is timed as one batch of every sample, and the table says that
// batch, not the train.batch_size that was asked for.
TEST(LoaderSweep, ASetSmallerThanTheBatchIsTimedAndNamedAsOneBatchOfEverySample) {
  profile::SweepOptions options;
  options.workers = {0};
  options.caches = {};
  options.batch_size = 64;
  options.batches = 2;
  options.repeats = 1;
  const auto sweep = profile::sweep_loader(std::make_shared<SlowSamples>(12), at::Device(at::kCPU), options);
  EXPECT_EQ(sweep.batch_size, 12);
  const auto& only = sweep.results.front();
  EXPECT_DOUBLE_EQ(only.samples_per_second, only.median_batches_per_second * 12);
  EXPECT_NE(profile::sweep_table(sweep).find("slow samples, batch 12 (every sample: fewer than train.batch_size 64), "), std::string::npos)
      << profile::sweep_table(sweep);
}

// The cache's gather figure reads in the unit that fits it: a small dataset's is MB/s, not "0.0 GB/s".
TEST(LoaderSweep, TheTableGivesTheGatherInAUnitThatFitsIt) {
  profile::LoaderSweep sweep;
  sweep.device = "cpu";
  sweep.batch_size = 4;
  profile::SweepResult streamed, cached;
  cached.setting.cache = data::CacheMode::vram;
  cached.gather_rows = 5;
  cached.gather_gbps = 0.0036;
  sweep.results = {streamed, cached};
  EXPECT_NE(profile::sweep_table(sweep).find("the gather alone (5 samples a gather"), std::string::npos);
  EXPECT_NE(profile::sweep_table(sweep).find("3.6 MB/s of samples"), std::string::npos) << profile::sweep_table(sweep);
  sweep.results[1].gather_gbps = 6.44;
  EXPECT_NE(profile::sweep_table(sweep).find("6.4 GB/s of samples\n"), std::string::npos) << profile::sweep_table(sweep);
}

// On a GPU the vram gather is set against the copy within the GPU's memory, its ceiling.
TEST(LoaderSweep, TheTableSetsTheGpuGatherAgainstTheDeviceCopy) {
  profile::LoaderSweep sweep;
  sweep.device = "cuda:0";
  sweep.pinned_copy_gbps = 50;
  sweep.device_copy_gbps = 2072;
  profile::SweepResult streamed, vram, ram;
  vram.setting.cache = data::CacheMode::vram;
  vram.gather_gbps = 1243;
  ram.setting.cache = data::CacheMode::ram;
  ram.gather_gbps = 20;
  sweep.results = {streamed, vram, ram};
  const auto table = profile::sweep_table(sweep);
  EXPECT_NE(table.find("1243.0 GB/s of samples, 60 % of a device-to-device copy (2072 GB/s, measured)\n"), std::string::npos) << table;
  // The pinned cache's gather is host work and a host-to-device copy: the device copy is not its ceiling.
  EXPECT_NE(table.find("20.0 GB/s of samples\n"), std::string::npos) << table;
  EXPECT_NE(profile::sweep_json(sweep).find("\"device_copy_gbps\": 2072"), std::string::npos);
}

// The lines to paste say what vram means on the CPU, where the name would mislead.
TEST(LoaderSweep, TheYamlToPasteSaysWhatVramMeansOnTheCpu) {
  profile::LoaderSweep sweep;
  sweep.device = "cpu";
  profile::SweepResult cached;
  cached.setting.cache = data::CacheMode::vram;
  sweep.results = {cached};
  EXPECT_EQ(profile::best_yaml(sweep), "data:\n  cache: vram  # training on the CPU, vram is the data in RAM\n");
  sweep.device = "cuda:0";
  EXPECT_EQ(profile::best_yaml(sweep), "data:\n  cache: vram\n");
}

// The fastest setting is marked unless an earlier one (fewer threads, a smaller prefetch, streaming
// before caching) is within 5 % of it: the same speed for less, within the timing's noise.
TEST(LoaderSweep, TheBestIsTheFirstSettingAsFastAsTheFastest) {
  const auto best_of = [](std::vector<double> rates) {
    std::vector<profile::SweepResult> results(rates.size());
    for (std::size_t i = 0; i < rates.size(); ++i) results[i].samples_per_second = rates[i];
    return profile::best_result(results);
  };
  EXPECT_EQ(best_of({100, 110}), 1U);
  EXPECT_EQ(best_of({100, 104, 98}), 0U);  // 4 % slower than the fastest: as fast
  EXPECT_EQ(best_of({100, 104, 98, 200, 195}), 3U);
  EXPECT_EQ(best_of({100, 120, 195, 200}), 2U);
  EXPECT_EQ(best_of({}), 0U);
}

// The plot's axis is labelled at round figures (0, 500k, 1M, 1.5M), not at fractions of the best rate.
TEST(LoaderSweep, ThePlotsAxisHasRoundTicks) {
  profile::LoaderSweep sweep;
  sweep.device = "cpu";
  sweep.batch_size = 64;
  profile::SweepResult streamed, two;
  streamed.samples_per_second = 1.3e6;
  two.setting.workers = 2;
  two.samples_per_second = 6.1e5;
  sweep.results = {streamed, two};
  const auto svg = profile::sweep_svg(sweep);
  for (const char* tick : {">0<", ">500k<", ">1M<", ">1.5M<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick << "\n" << svg;
  EXPECT_EQ(svg.find(">2M<"), std::string::npos) << svg;
}

// The sampler, the threaded loader, the cache plan and the in-memory cache, on the CPU (the GPU
// path of the same code runs in tests/gpu).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <tuple>

#include "data/chunked_upload.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/loader.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

// Sample i is the vector [i, i, i] with label i % 5; some indices misbehave on purpose.
class Probe final : public Dataset {
 public:
  explicit Probe(std::int64_t n) : n_(n) {
    layout_.input_shape = {3};
    layout_.input_dtype = at::kFloat;
  }
  std::int64_t size() const override { return n_; }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t i, void* input, void* target) const override {
    reads++;
    threads_mutex.lock();
    threads.insert(std::this_thread::get_id());
    threads_mutex.unlock();
    if (i == corrupt) throw SkippedSample("corrupt on purpose");
    if (i == failing) throw std::runtime_error("disk on fire");
    if (i == stalling) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    auto* x = static_cast<float*>(input);
    x[0] = x[1] = x[2] = static_cast<float>(i);
    *static_cast<std::int64_t*>(target) = i % 5;
  }
  std::string origin(std::int64_t i) const override { return "probe/file" + std::to_string(i) + ".bin"; }
  std::string description() const override { return "probe"; }

  std::int64_t corrupt = -1, failing = -1, stalling = -1;
  mutable std::atomic<int> reads{0};
  mutable std::mutex threads_mutex;
  mutable std::set<std::thread::id> threads;

 private:
  std::int64_t n_;
  SampleLayout layout_;
};

std::vector<std::int64_t> to_vector(const at::Tensor& t) {
  const auto c = t.to(at::kLong).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

// Every sample index the loader delivers for `order`, in delivery order (inputs carry the index).
std::vector<std::int64_t> drain(Feed& feed, const at::Tensor& order, std::int64_t batch, std::int64_t* batches = nullptr) {
  feed.start(order, batch);
  std::vector<std::int64_t> seen;
  std::int64_t count = 0;
  while (auto fed = feed.next()) {
    ++count;
    for (auto v : to_vector(fed->batch.inputs.select(1, 0))) seen.push_back(v);
    EXPECT_TRUE(at::equal(fed->batch.targets, fed->batch.inputs.select(1, 0).to(at::kLong).remainder(5)));
  }
  if (batches) *batches = count;
  return seen;
}

}  // namespace

TEST(EpochSampler, ShardsCoverEverySampleExactlyOnce) {
  for (const std::int64_t world : {1, 2, 3, 4, 7}) {
    std::vector<int> hits(103, 0);
    std::int64_t smallest = 1 << 30, largest = 0;
    for (std::int64_t rank = 0; rank < world; ++rank) {
      const EpochSampler sampler(103, true, 9, rank, world);
      const auto order = sampler.order(4);
      EXPECT_EQ(order.size(0), sampler.size());
      smallest = std::min(smallest, sampler.size());
      largest = std::max(largest, sampler.size());
      for (auto i : to_vector(order)) hits[static_cast<std::size_t>(i)]++;
    }
    for (int h : hits) EXPECT_EQ(h, 1) << "world " << world;
    EXPECT_LE(largest - smallest, 1);
  }
  // drop_last evens the shards out by leaving the remainder out.
  EXPECT_EQ(EpochSampler(103, true, 9, 0, 4, true).size(), 25);
  EXPECT_EQ(EpochSampler(103, true, 9, 3, 4, true).order(0).size(0), 25);
  EXPECT_THROW(EpochSampler(10, true, 1, 2, 2), Error);
}

TEST(EpochSampler, OrderIsAPureFunctionOfSeedEpochAndRank) {
  const EpochSampler a(50, true, 3, 1, 2), b(50, true, 3, 1, 2);
  EXPECT_TRUE(at::equal(a.order(7), b.order(7)));
  EXPECT_FALSE(at::equal(a.order(7), a.order(8)));
  EXPECT_FALSE(at::equal(a.order(7), EpochSampler(50, true, 4, 1, 2).order(7)));
}

TEST(Loader, DeliversTheOrderInBatchesWithAnyWorkerCount) {
  auto data = std::make_shared<Probe>(100);
  const auto order = EpochSampler(100, true, 5).order(0);
  for (const int workers : {0, 1, 3, 8}) {
    Loader loader(data, 16, LoaderOptions{workers, 2, true, 30, c10::kCPU});
    std::int64_t batches = 0;
    EXPECT_EQ(drain(loader, order, 16, &batches), to_vector(order)) << workers << " workers";
    EXPECT_EQ(batches, 7);  // 6 x 16 + 4
  }
}

// What a loader will hold is known before it allocates (the trainer checks it against free RAM),
// and is what it then holds: one buffer without workers, else workers x prefetch.
TEST(Loader, ItsStagingIsKnownBeforeItAllocates) {
  auto data = std::make_shared<Probe>(100);
  for (const auto& [workers, prefetch, buffers] : {std::tuple{0, 4, 1}, std::tuple{1, 2, 2}, std::tuple{3, 4, 12}}) {
    const LoaderOptions options{workers, prefetch, false, 30, c10::kCPU};
    const auto [count, bytes] = Loader::staging_for(data->layout(), 16, options);
    EXPECT_EQ(count, static_cast<std::size_t>(buffers)) << workers << " x " << prefetch;
    EXPECT_EQ(bytes, static_cast<std::uint64_t>(16 * (data->layout().input_bytes() + data->layout().target_bytes())));
    EXPECT_EQ(Loader(data, 16, options).staging_bytes(), count * bytes) << workers << " x " << prefetch;
  }
}

TEST(Loader, WorkersPersistAcrossEpochsAndMemoryStaysFlat) {
  memory::install_counting_cpu_allocator();
  auto data = std::make_shared<Probe>(256);
  Loader loader(data, 32, LoaderOptions{2, 2, false, 30, c10::kCPU});
  const auto staging = loader.staging_bytes();
  std::uint64_t after_first = 0;
  for (std::int64_t epoch = 0; epoch < 5; ++epoch) {
    const auto order = EpochSampler(256, true, 1).order(epoch);
    EXPECT_EQ(drain(loader, order, 32), to_vector(order));
    if (epoch == 0) after_first = memory::cpu_memory_stats().allocated;
    EXPECT_EQ(memory::cpu_memory_stats().allocated, after_first) << "epoch " << epoch;
  }
  EXPECT_EQ(loader.staging_bytes(), staging);
  // At most the loader's two threads read all five epochs (none started per epoch), never this one.
  EXPECT_GE(data->threads.size(), 1U);
  EXPECT_LE(data->threads.size(), 2U);
  EXPECT_EQ(data->threads.count(std::this_thread::get_id()), 0U);
}

TEST(Loader, ARestartedPassResumesMidEpoch) {
  auto data = std::make_shared<Probe>(40);
  Loader loader(data, 8, LoaderOptions{2, 2, false, 30, c10::kCPU});
  const auto order = EpochSampler(40, true, 2).order(3);
  loader.start(order, 8);
  (void)loader.next();  // a run stops after two batches...
  (void)loader.next();
  // ...and its successor starts from the saved position: exactly the rest, in order.
  EXPECT_EQ(drain(loader, order.slice(0, 16), 8), to_vector(order.slice(0, 16)));
}

TEST(Loader, SkipsUnreadableSamplesAndCountsThem) {
  auto data = std::make_shared<Probe>(20);
  data->corrupt = 6;
  Loader loader(data, 5, LoaderOptions{2, 1, false, 30, c10::kCPU});
  loader.start(at::arange(20, at::kLong), 5);
  std::int64_t rows = 0, covered = 0;
  while (auto fed = loader.next()) rows += fed->batch.size(), covered += fed->covered;
  EXPECT_EQ(rows, 19);
  EXPECT_EQ(covered, 20);
  ASSERT_EQ(loader.skipped().size(), 1U);
  EXPECT_EQ(loader.skipped()[0], "probe/file6.bin: corrupt on purpose");
}

TEST(Loader, AWorkersErrorNamesTheSampleAndFile) {
  auto data = std::make_shared<Probe>(30);
  data->failing = 17;
  for (const int workers : {0, 2}) {
    Loader loader(data, 10, LoaderOptions{workers, 2, false, 30, c10::kCPU});
    loader.start(at::arange(30, at::kLong), 10);
    ASSERT_TRUE(loader.next());
    try {
      while (loader.next()) {
      }
      ADD_FAILURE() << "no error reached the consumer";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sample 17 (probe/file17.bin): disk on fire"), std::string::npos) << e.what();
    }
  }
}

TEST(Loader, AStalledWorkerHitsTheTimeout) {
  auto data = std::make_shared<Probe>(10);
  data->stalling = 0;
  Loader loader(data, 5, LoaderOptions{1, 1, false, 0.3, c10::kCPU});
  loader.start(at::arange(10, at::kLong), 5);
  try {
    loader.next();
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch 1 of 2 not ready after 0 s (its first sample: probe/file0.bin)"), std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("data.timeout"), std::string::npos);
  }
}

TEST(CachePlan, ChoosesVramThenRamThenStreaming) {
  CacheFigures f;
  f.gpu = true;
  f.dataset_bytes = 1 * core::kGiB;
  f.step_bytes = 2 * core::kGiB;
  f.device_free_bytes = 10 * core::kGiB;
  f.host_free_bytes = 20 * core::kGiB;
  auto plan = plan_cache("auto", f);
  EXPECT_EQ(plan.mode, CacheMode::vram);
  EXPECT_NE(plan.reason.find("1.00 GiB of data + 2.00 GiB for the training step + 512.00 MiB headroom <= 10.00 GiB free GPU memory"),
            std::string::npos)
      << plan.reason;
  f.step_bytes = 9 * core::kGiB;  // the step leaves no room: RAM
  EXPECT_EQ(plan_cache("auto", f).mode, CacheMode::ram);
  f.dataset_bytes = 30 * core::kGiB;  // larger than RAM too: stream
  EXPECT_EQ(plan_cache("auto", f).mode, CacheMode::none);
  EXPECT_THROW(plan_cache("vram", f), UsageError);
  EXPECT_THROW(plan_cache("ram", f), UsageError);
  EXPECT_EQ(plan_cache("none", f).mode, CacheMode::none);
}

TEST(CachePlan, OnTheCpuArraysInMemoryAreTheCache) {
  CacheFigures f;
  f.dataset_bytes = 100 * core::kMiB;
  f.device_free_bytes = f.host_free_bytes = 1 * core::kGiB;
  EXPECT_EQ(plan_cache("auto", f).mode, CacheMode::vram);  // decoded images that fit RAM
  f.dataset_bytes = 2 * core::kGiB;
  EXPECT_EQ(plan_cache("auto", f).mode, CacheMode::none);
  f.in_memory = true;  // arrays already resident cost nothing more
  EXPECT_EQ(plan_cache("auto", f).mode, CacheMode::vram);
  EXPECT_EQ(plan_cache("none", f).mode, CacheMode::none);
}

TEST(DeviceCache, GathersBatchesInTheFeedOrder) {
  const TensorDataset set{at::arange(30, at::kFloat).view({10, 3}), at::arange(10, at::kLong)};
  const DeviceCache cache(set, CacheMode::vram, c10::kCPU);
  EXPECT_EQ(cache.bytes(), 30 * 4 + 10 * 8);
  auto feed = cache.feed();
  const auto order = at::tensor({3, 1, 4, 1, 5}, at::kLong);
  feed->start(order, 2);
  std::vector<std::int64_t> labels;
  std::int64_t covered = 0;
  while (auto fed = feed->next()) {
    covered += fed->covered;
    for (auto v : to_vector(fed->batch.targets)) labels.push_back(v);
    EXPECT_TRUE(at::equal(fed->batch.inputs.select(1, 0), fed->batch.targets.to(at::kFloat) * 3));
  }
  EXPECT_EQ(labels, (std::vector<std::int64_t>{3, 1, 4, 1, 5}));
  EXPECT_EQ(covered, 5);
}

// Several batches gathered at once and handed out as views are the batches gathered one by one,
// whatever the chunk, the batch, a short last batch or a pass restarted mid-epoch.
TEST(DeviceCache, ChunkedGathersHandOutTheSameBatches) {
  const TensorDataset set{at::arange(23 * 4, at::kFloat).view({23, 4}), at::arange(23, at::kLong)};
  const DeviceCache cache(set, CacheMode::vram, c10::kCPU);
  const auto order = at::randperm(23, at::kLong);
  for (const std::int64_t batch : {1, 4, 5, 23, 30}) {
    for (const std::int64_t from : {0, 9}) {
      auto one_by_one = cache.feed(1);
      one_by_one->start(order.slice(0, from), batch);
      std::vector<FedBatch> expected;
      while (auto fed = one_by_one->next()) expected.push_back(*fed);
      ASSERT_EQ(static_cast<std::int64_t>(expected.size()), (23 - from + batch - 1) / batch);
      for (const std::int64_t per_gather : {2, 3, 7, 64}) {
        auto chunked = cache.feed(per_gather);
        chunked->start(order.slice(0, from), batch);
        std::size_t i = 0;
        while (auto fed = chunked->next()) {
          ASSERT_LT(i, expected.size());
          EXPECT_EQ(fed->covered, expected[i].covered);
          EXPECT_TRUE(at::equal(fed->batch.inputs, expected[i].batch.inputs)) << batch << " " << per_gather << " " << i;
          EXPECT_TRUE(at::equal(fed->batch.targets, expected[i].batch.targets));
          ++i;
        }
        EXPECT_EQ(i, expected.size()) << "batch " << batch << ", " << per_gather << " per gather";
      }
    }
  }
}

// A feed keeps a chunk only while batches of it are still to come: once the last one is handed
// out, the caller's batch is all that holds it, so a failed step or the end of a pass frees it.
TEST(DeviceCache, AChunkIsFreedWithItsLastBatch) {
  const TensorDataset set{at::arange(23 * 4, at::kFloat).view({23, 4}), at::arange(23, at::kLong)};
  const DeviceCache cache(set, CacheMode::vram, c10::kCPU);
  auto feed = cache.feed(3);
  feed->start(at::arange(23, at::kLong), 4);
  for (int i = 0; i < 3; ++i) {
    auto fed = feed->next();
    ASSERT_TRUE(fed);
    const auto memory = fed->batch.inputs.storage().getWeakStorageImpl();
    fed.reset();  // the step is done with its batch
    // The feed still needs the chunk for its next batches, and only for those.
    EXPECT_EQ(memory.expired(), i == 2) << "batch " << i;
  }
}

TEST(DeviceCache, GathersUpTo32MiBOfBatchesAtOnceOnAGpu) {
  EXPECT_EQ(gather_chunk_bytes(10 * core::kGiB), 32 * core::kMiB);
  EXPECT_EQ(gather_chunk_bytes(200000 * 1024), 200000 * 1024 / 8);  // the tabular case: an eighth of its 195 MiB
  EXPECT_EQ(gather_chunk_bytes(0), 0u);
  EXPECT_EQ(batches_per_gather(core::kMiB, 32 * core::kMiB), 32);   // batches of 1024 rows of 1 KiB
  EXPECT_EQ(batches_per_gather(256 * 3072, 32 * core::kMiB), 42);   // CIFAR-sized uint8 images, batch 256
  EXPECT_EQ(batches_per_gather(4 * 1024, 32 * core::kMiB), 64);     // tiny batches: at most 64
  EXPECT_EQ(batches_per_gather(256 * 150528, 32 * core::kMiB), 1);  // ImageNet-sized: one at a time
  EXPECT_EQ(batches_per_gather(0, 32 * core::kMiB), 1);
  EXPECT_EQ(batches_per_gather(core::kMiB, 0), 1);
  // On the CPU the cache's feed gathers batch by batch.
  const DeviceCache cache({at::zeros({100000, 256}), at::zeros({100000}, at::kLong)}, CacheMode::vram, c10::kCPU);
  EXPECT_EQ(cache.batches_per_gather(1024), 1);
}

// A ram cache on a GPU keeps the table in the RAM the source holds it in: each batch is gathered
// into pinned memory, so a pinned copy of the whole table would only hold it twice. A memory-mapped
// file is read in once, so that no batch waits on the disk. (No CUDA call: this runs on the CPU.)
TEST(DeviceCache, ARamCacheHoldsTheTableOnceAndReadsAMappedFileIn) {
  const c10::Device gpu(c10::kCUDA, 0);
  const TensorDataset decoded{at::arange(30, at::kFloat).view({10, 3}), at::arange(10, at::kLong)};
  const DeviceCache ram(decoded, CacheMode::ram, gpu);
  EXPECT_EQ(ram.mode(), CacheMode::ram);
  EXPECT_EQ(ram.data().inputs.data_ptr(), decoded.inputs.data_ptr());
  EXPECT_EQ(ram.data().targets.data_ptr(), decoded.targets.data_ptr());
  EXPECT_FALSE(ram.data().inputs.is_pinned());

  const auto mapped =
      read_npy(std::string(gputrain::test_support::format_fixtures_dir()) + "/npy/f4_le_c.npy");  // C order: mapped, not read
  const auto labels = at::arange(3, at::kLong);
  const DeviceCache from_file({mapped, labels}, CacheMode::ram, gpu);
  EXPECT_NE(from_file.data().inputs.data_ptr(), mapped.data_ptr());
  EXPECT_TRUE(at::equal(from_file.data().inputs, mapped));
  EXPECT_EQ(from_file.data().targets.data_ptr(), labels.data_ptr());
}

// The VRAM cache's upload stages a table's rows chunk by chunk: every chunk size (one row, a
// short last chunk, more than the table) and row shape gives the table back bit for bit.
TEST(ChunkedUpload, CopiesTheRowsChunkByChunkBitForBit) {
  const std::vector<at::Tensor> tables{at::randn({7, 5}), at::randint(0, 256, {9, 3, 2, 2}, at::kByte), at::arange(4, at::kLong),
                                       at::empty({6, 0})};
  for (const auto& rows : tables)
    for (const std::uint64_t chunk_bytes : {1, 20, 24, 100, 1 << 20}) {
      auto out = at::full_like(rows, 7);
      copy_rows_in_chunks(rows, out, chunk_bytes, /*pinned=*/false);
      EXPECT_TRUE(at::equal(out, rows)) << rows.sizes() << " in chunks of " << chunk_bytes << " bytes";
    }
  // Off a GPU nothing is staged or copied: the table is where it was.
  const auto table = at::randn({3, 2});
  EXPECT_TRUE(upload_in_chunks(table, c10::kCPU).is_same(table));
}

TEST(BatchTransform, ScalesNormalisesAndAugments) {
  BatchTransform plain;
  const auto floats = at::rand({2, 3});
  EXPECT_TRUE(plain.apply(floats, true).is_same(floats));  // nothing to do: no copy
  const auto bytes = at::full({4, 3, 8, 8}, 255, at::kByte);
  EXPECT_TRUE(at::allclose(plain.apply(bytes, true), at::ones({4, 3, 8, 8})));

  BatchTransform norm;
  norm.mean = {0.5, 0.0, 1.0};
  norm.std = {0.5, 1.0, 2.0};
  const auto y = norm.apply(bytes, false);
  EXPECT_FLOAT_EQ(y[0][0][0][0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(y[0][2][0][0].item<float>(), 0.0f);

  BatchTransform aug;
  aug.crop_padding = 2;
  aug.hflip = true;
  const auto image = at::arange(64, at::kFloat).view({1, 1, 8, 8}).repeat({64, 1, 1, 1});
  const auto out = aug.apply(image, true);
  EXPECT_EQ(out.sizes(), image.sizes());
  // Each output is a shifted (zero-filled) and maybe mirrored window of its input: every non-zero
  // value comes from the input, and the crops differ between images.
  const auto nonzero = out.masked_select(out.ne(0));
  EXPECT_TRUE(at::isin(nonzero, image[0].flatten()).all().item<bool>());
  EXPECT_FALSE(at::equal(out[0], out[1]) && at::equal(out[1], out[2]) && at::equal(out[2], out[3]));
  EXPECT_TRUE(at::equal(aug.apply(image, false), image));  // validation batches are not augmented
}

// data.standardize's figures: per feature of vectors, per channel of images (uint8 as [0, 1]), over
// more samples than one chunk; normalising with them gives mean 0 and std 1 per channel.
TEST(ChannelStats, MeasuresWhatTheTransformNormalises) {
  at::manual_seed(3);
  const auto vectors =
      at::randn({9000, 3}, at::kDouble) * at::tensor({1.0, 10.0, 0.1}, at::kDouble) + at::tensor({5.0, -2.0, 0.0}, at::kDouble);
  auto stats = measure_channel_stats(vectors.to(at::kFloat));
  ASSERT_EQ(stats.mean.size(), 3u);
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(stats.mean[c], vectors.select(1, static_cast<std::int64_t>(c)).mean().item<double>(), 1e-5);
    EXPECT_NEAR(stats.std[c], vectors.select(1, static_cast<std::int64_t>(c)).std(/*unbiased=*/false).item<double>(), 1e-5);
  }
  EXPECT_TRUE(stats.constant_channels.empty());

  const auto images = at::randint(0, 256, {5000, 2, 4, 4}, at::kByte);
  stats = measure_channel_stats(images);
  BatchTransform norm;
  norm.mean = stats.mean;
  norm.std = stats.std;
  const auto y = norm.apply(images, false).to(at::kDouble);
  for (std::int64_t c = 0; c < 2; ++c) {
    EXPECT_NEAR(y.select(1, c).mean().item<double>(), 0.0, 1e-6);
    EXPECT_NEAR(y.select(1, c).std(/*unbiased=*/false).item<double>(), 1.0, 1e-5);
  }
}

TEST(ChannelStats, AConstantChannelIsOnlyCentred) {
  auto x = at::rand({100, 2});
  x.select(1, 1).fill_(1000.25f);
  const auto stats = measure_channel_stats(x);
  EXPECT_EQ(stats.constant_channels, (std::vector<std::int64_t>{1}));
  EXPECT_DOUBLE_EQ(stats.std[1], 1.0);
  EXPECT_NEAR(stats.mean[1], 1000.25, 1e-9);
}

TEST(Materialize, ReadsEverySampleInOrderLeavesOutUnreadableOnesAndReportsProgress) {
  Probe data(300);
  data.corrupt = 7;
  std::int64_t calls = 0, last_total = 0;
  const auto loaded = materialize(data, 3, [&](std::int64_t, std::int64_t total) {
    ++calls;
    last_total = total;
  });
  EXPECT_EQ(loaded.set.size(), 299);
  ASSERT_EQ(loaded.skipped.size(), 1U);
  EXPECT_EQ(loaded.skipped[0], "probe/file7.bin: corrupt on purpose");
  EXPECT_EQ(loaded.set.inputs[7][0].item<float>(), 8.0f);  // sample 8 moved up into 7's place
  EXPECT_GT(calls, 0);
  EXPECT_EQ(last_total, 300);
  data.failing = 250;  // an error that is not a skip stops the whole load
  EXPECT_THROW(materialize(data, 2), std::runtime_error);
}

// The data layer on a GPU: the loader's pinned ring and side-stream copies, the VRAM and pinned-RAM
// caches, and training through each. Skipped without a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <filesystem>
#include <limits>
#include <vector>

#include "data/chunked_upload.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/loader.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/quiet_trainer.hpp"

using namespace gputrain;
using namespace gputrain::data;
namespace fs = std::filesystem;

class GpuData : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

namespace {

TensorDataset numbered(std::int64_t n) {
  // Sample i holds i everywhere (uint8 wraps, so keep n <= 256 for the check), label i % 7.
  return {at::arange(n, at::kByte).view({n, 1, 1, 1}).expand({n, 3, 8, 8}).contiguous(), at::arange(n, at::kLong).remainder(7)};
}

}  // namespace

// Every batch arrives on the GPU, in order, with the right contents, for pinned and pageable
// staging and any thread count; the copies overlap on the side stream without corrupting batches.
TEST_F(GpuData, LoaderDeliversExactBatchesToTheGpu) {
  const auto set = numbered(200);
  auto dataset = make_array_dataset(set, "numbered", "numbered");
  const c10::Device gpu(c10::kCUDA, 0);
  const auto order = EpochSampler(200, true, 3).order(0);
  for (const bool pin : {true, false})
    for (const int workers : {0, 1, 4}) {
      Loader loader(dataset, 32, LoaderOptions{workers, 2, pin, 60, gpu});
      for (int epoch = 0; epoch < 3; ++epoch) {
        loader.start(order, 32);
        std::int64_t position = 0;
        while (auto fed = loader.next()) {
          ASSERT_TRUE(fed->batch.inputs.is_cuda());
          const auto expected = order.slice(0, position, position + fed->covered);
          // Touch the batch on the compute stream right away, as a training step would.
          const auto got = fed->batch.inputs.select(1, 0).select(1, 0).select(1, 0).to(at::kLong);
          EXPECT_TRUE(at::equal(got.cpu(), expected)) << "pin " << pin << ", workers " << workers;
          EXPECT_TRUE(at::equal(fed->batch.targets.cpu(), expected.remainder(7)));
          position += fed->covered;
        }
        EXPECT_EQ(position, 200);
      }
    }
}

TEST_F(GpuData, VramAndRamCachesGatherTheSameBatches) {
  const auto set = numbered(100);
  const c10::Device gpu(c10::kCUDA, 0);
  const DeviceCache vram(set, CacheMode::vram, gpu), ram(set, CacheMode::ram, gpu);
  EXPECT_TRUE(vram.data().inputs.is_cuda());
  EXPECT_EQ(ram.data().inputs.data_ptr(), set.inputs.data_ptr());  // held once: each batch is gathered into pinned memory
  const auto indices = at::tensor({5, 99, 0, 42}, at::kLong);
  const auto a = vram.gather(indices), b = ram.gather(indices);
  EXPECT_TRUE(a.inputs.is_cuda() && b.inputs.is_cuda());
  EXPECT_TRUE(at::equal(a.inputs, b.inputs));
  EXPECT_TRUE(at::equal(a.inputs.cpu(), set.inputs.index_select(0, indices)));
  EXPECT_EQ(a.inputs.scalar_type(), at::kByte);  // uint8 stays uint8 until the transform
}

// The VRAM cache's upload through pinned chunks: the table bit for bit, whatever the chunk, with
// the chunks' staging blocks reused while earlier copies may still be reading them.
TEST_F(GpuData, ChunkedUploadsCopyTheTableBitForBit) {
  const c10::Device gpu(c10::kCUDA, 0);
  const auto table = at::randn({1000, 37});
  for (const std::uint64_t chunk_bytes : {std::uint64_t{1}, std::uint64_t{148 * 3}, std::uint64_t{4096}, kUploadChunkBytes}) {
    const auto uploaded = upload_in_chunks(table, gpu, chunk_bytes);
    EXPECT_TRUE(uploaded.is_cuda());
    EXPECT_TRUE(at::equal(uploaded.cpu(), table)) << "chunks of " << chunk_bytes << " bytes";
  }
  const auto transposed = table.t();  // not contiguous: made so first
  EXPECT_TRUE(at::equal(upload_in_chunks(transposed, gpu, 4096).cpu(), transposed));
}

// The gather kernel moves each table as the widest word it allows: every width, a view that starts
// off the word boundary, and rows that are not contiguous (index_select's), bit for bit.
TEST_F(GpuData, TheGatherKernelMovesRowsOfEveryDtypeBitForBit) {
  const c10::Device gpu(c10::kCUDA, 0);
  const auto indices = at::tensor({4, 0, 4, 2, 1}, at::kLong);
  const auto bits = [](const at::Tensor& t) { return t.contiguous().view({-1}).view(at::kByte).cpu(); };
  const auto off_boundary = at::randint(0, 256, {1 + 5 * 64}, at::TensorOptions().dtype(at::kByte).device(gpu));
  std::vector<at::Tensor> inputs{
      at::randint(0, 256, {5, 3, 32, 32}, at::kByte),  // 16-byte words
      at::randn({5, 256}),                             // 16
      at::randn({5, 6}).to(at::kDouble),               // 16
      at::randint(0, 2, {5, 8}, at::kBool),            // 8
      at::randn({5, 3}),                               // 4
      at::randn({5, 6}).to(at::kBFloat16),             // 4
      at::randint(0, 256, {5, 6}, at::kByte),          // 2
      at::randint(0, 256, {5, 3, 5, 5}, at::kByte),    // 1
      off_boundary.slice(0, 1).view({5, 64}),          // on the GPU already, one byte past the boundary: 1
      at::randn({4, 5}).t(),                           // not contiguous: index_select
  };
  inputs[1][1][7] = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto& x = inputs[k];
    const DeviceCache cache({x, at::arange(5, at::kFloat)}, CacheMode::vram, gpu);
    const auto got = cache.gather(indices.to(gpu));
    ASSERT_TRUE(got.inputs.is_cuda());
    EXPECT_EQ(got.inputs.sizes(), x.index_select(0, indices.to(x.device())).sizes()) << "case " << k;
    EXPECT_EQ(got.inputs.scalar_type(), x.scalar_type()) << "case " << k;
    EXPECT_TRUE(at::equal(bits(got.inputs), bits(x.index_select(0, indices.to(x.device()))))) << "case " << k;
    EXPECT_TRUE(at::equal(got.targets.cpu(), at::tensor({4.0f, 0.0f, 4.0f, 2.0f, 1.0f}))) << "case " << k;
  }
}

// Past 2^31 words the kernel counts in 64 bits: 600,000 rows of 4,097 bytes move byte by byte,
// 2.46e9 words (about 7.4 GB of GPU memory with index_select's reference).
TEST_F(GpuData, TheGatherKernelCountsPastTwoToTheThirtyOneWords) {
  const c10::Device gpu(c10::kCUDA, 0);
  if (const auto free = memory::memory_figures(gpu).limit; free < 8 * core::kGiB)
    GTEST_SKIP() << "needs 8 GiB of GPU memory, " << core::format_bytes(free) << " free";
  const auto on_gpu = at::TensorOptions().device(gpu);
  const std::int64_t n = 600000;
  const TensorDataset set{at::randint(0, 256, {n, 4097}, on_gpu.dtype(at::kByte)), at::arange(n, on_gpu.dtype(at::kLong))};
  const DeviceCache cache(set, CacheMode::vram, set.inputs.device());
  const auto indices = at::randperm(n, on_gpu.dtype(at::kLong));
  const auto got = cache.gather(indices);
  EXPECT_TRUE(at::equal(got.targets, indices));
  EXPECT_TRUE(at::equal(got.inputs, set.inputs.index_select(0, indices)));
}

// On a GPU the vram feed gathers many batches per launch (row_gather's kernel) and hands out views:
// every batch must be what the CPU gathers for the same order, a short last batch and a pass
// restarted mid-epoch included.
TEST_F(GpuData, ChunkedVramGathersMatchTheCpuBatchForBatch) {
  const std::int64_t n = 20000;
  const TensorDataset set{at::randint(0, 256, {n, 3, 8, 8}, at::kByte), at::randint(0, 10, {n}, at::kLong)};
  const DeviceCache vram(set, CacheMode::vram, c10::Device(c10::kCUDA, 0)), cpu(set, CacheMode::vram, c10::kCPU);
  const std::int64_t batch = 64;
  ASSERT_GT(vram.batches_per_gather(batch), 8);  // 192-byte samples: a chunk of many batches
  const auto order = at::randperm(n, at::kLong);
  for (const std::int64_t from : {0, 12345}) {
    auto on_gpu = vram.feed(), on_cpu = cpu.feed();
    on_gpu->start(order.slice(0, from), batch);
    on_cpu->start(order.slice(0, from), batch);
    std::int64_t batches = 0;
    while (auto expected = on_cpu->next()) {
      const auto got = on_gpu->next();
      ASSERT_TRUE(got) << "batch " << batches;
      EXPECT_TRUE(got->batch.inputs.is_cuda());
      EXPECT_EQ(got->covered, expected->covered);
      ASSERT_TRUE(at::equal(got->batch.inputs.cpu(), expected->batch.inputs)) << "batch " << batches << " from " << from;
      ASSERT_TRUE(at::equal(got->batch.targets.cpu(), expected->batch.targets));
      ++batches;
    }
    EXPECT_FALSE(on_gpu->next());
    EXPECT_EQ(batches, (n - from + batch - 1) / batch);
  }
}

// The same run, bit for bit, whichever way the data reaches the GPU.
TEST_F(GpuData, TrainingIsTheSameThroughEveryCacheMode) {
  std::vector<at::Tensor> reference;
  for (const std::string cache : {"vram", "ram", "none"}) {
    const auto dir = fs::temp_directory_path() / ("gputrain-gpu-data-" + cache);
    fs::remove_all(dir);
    const auto config =
        train::load_config({{},
                            {"model.name=mlp", "model.hidden=[64]", "data.shape=[32]", "data.samples=1000", "data.val_samples=200",
                             "train.epochs=2", "train.batch_size=100", "device=cuda", "train.deterministic=true", "train.tf32=false",
                             "data.cache=" + cache, "data.num_workers=2", "logging.progress=off", "logging.dir=" + dir.string()},
                            ""});
    train::Trainer trainer(config, test_support::quiet_trainer());
    const auto result = trainer.fit();
    EXPECT_EQ(result.data_cache, cache);
    std::vector<at::Tensor> weights;
    for (const auto& [name, t] : trainer.model().named_state()) weights.push_back(t.cpu());
    if (reference.empty()) {
      reference = weights;
      continue;
    }
    for (std::size_t i = 0; i < weights.size(); ++i) EXPECT_TRUE(at::equal(weights[i], reference[i])) << cache << " tensor " << i;
  }
}

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "gputrain/core/units.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/memory/oom_guard.hpp"

using namespace gputrain;
using namespace gputrain::memory;

namespace {

const c10::Device kCpu(c10::kCPU);

// Removes any CPU cap a test set, however it ends.
struct CapReset {
  ~CapReset() { set_cpu_memory_cap(0); }
};

// Raises the typed OOM the allocators raise.
[[noreturn]] void raise_oom() { TORCH_CHECK_WITH(OutOfMemoryError, false, "simulated out of memory\nsecond line"); }

}  // namespace

TEST(CpuAllocator, CountsLiveTensorsAndThePeak) {
  install_counting_cpu_allocator();
  const auto before = cpu_memory_stats().allocated;
  reset_cpu_peak();
  {
    auto t = at::empty({1024, 256}, at::kFloat);  // 1 MiB
    EXPECT_EQ(cpu_memory_stats().allocated, before + core::kMiB);
  }
  EXPECT_EQ(cpu_memory_stats().allocated, before);
  EXPECT_GE(cpu_memory_stats().peak, before + core::kMiB);
  reset_cpu_peak();
  EXPECT_EQ(cpu_memory_stats().peak, before);
}

TEST(CpuAllocator, CapRaisesTheTypedOutOfMemoryErrorAndLiftsCleanly) {
  CapReset reset;
  install_counting_cpu_allocator();
  set_cpu_memory_cap(cpu_memory_stats().allocated + 2 * core::kMiB);
  auto fits = at::empty({1024, 256}, at::kFloat);  // 1 MiB: under the cap
  const auto refused = cpu_memory_stats().refused;
  try {
    auto too_much = at::empty({4 * 1024, 256}, at::kFloat);  // 4 MiB more
    FAIL() << "the cap let a 4 MiB tensor through";
  } catch (const c10::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("device.max_memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cpu_memory_stats().refused, refused + 1);
  set_cpu_memory_cap(0);
  EXPECT_NO_THROW(at::empty({4 * 1024, 256}, at::kFloat));
}

// An allocation the system itself refuses (no cap set) is the typed OutOfMemoryError too, so the
// OOM guard splits the step and a batch probe finds the batch too large; the allocator's own
// words ("you tried to allocate N bytes") stay in it, and nothing stays counted.
TEST(CpuAllocator, AnAllocationTheSystemRefusesIsTheTypedOutOfMemoryError) {
  install_counting_cpu_allocator();
  const auto before = cpu_memory_stats().allocated;
  try {
    auto too_much = at::empty({std::int64_t{1} << 58}, at::kFloat);  // 1 EiB
    FAIL() << "the system gave 1 EiB";
  } catch (const c10::OutOfMemoryError& e) {
    const std::string what = e.what_without_backtrace();
    EXPECT_EQ(what.rfind("CPU out of memory: the system refused ", 0), 0U) << what;
    EXPECT_NE(what.find("you tried to allocate 1152921504606846976 bytes"), std::string::npos) << what;
  }
  EXPECT_EQ(cpu_memory_stats().allocated, before);
}

TEST(CpuAllocator, ZeroByteTensorsAndRawAllocationsWork) {
  install_counting_cpu_allocator();
  const auto before = cpu_memory_stats().allocated;
  auto a = at::empty({0}, at::kFloat);
  auto b = at::empty({0}, at::kFloat);
  EXPECT_EQ(cpu_memory_stats().allocated, before);
  auto* allocator = c10::GetCPUAllocator();
  void* raw = allocator->raw_allocate(4096);  // LibTorch internals allocate this way too
  EXPECT_EQ(cpu_memory_stats().allocated, before + 4096);
  allocator->raw_deallocate(raw);
  EXPECT_EQ(cpu_memory_stats().allocated, before);
}

TEST(CpuBlockCache, AFreedBlockIsHandedToTheNextTensorOfItsSize) {
  install_counting_cpu_allocator();
  enable_cpu_block_cache(true);
  release_cpu_cache();
  const auto before = cpu_memory_stats();
  void* first = nullptr;
  {
    auto t = at::empty({1024, 256}, at::kFloat);  // 1 MiB
    first = t.data_ptr();
  }
  EXPECT_EQ(cpu_memory_stats().allocated, before.allocated);  // freed as far as the counts go
  EXPECT_EQ(cpu_memory_stats().cached, core::kMiB);
  auto again = at::empty({256, 1024}, at::kFloat);  // same bytes, other shape
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(cpu_memory_stats().cached, 0U);
  EXPECT_EQ(cpu_memory_stats().allocated, before.allocated + core::kMiB);
  auto other_size = at::empty({2 * 1024, 256}, at::kFloat);
  EXPECT_NE(other_size.data_ptr(), first);
}

TEST(CpuBlockCache, NeverHoldsTheProcessAboveMostOfTheMachinesMemory) {
  CapReset reset;
  install_counting_cpu_allocator();
  const auto uncapped = cpu_memory_stats().cache_bound;
  EXPECT_GT(uncapped, 0U);  // this machine's /proc/meminfo is readable
  EXPECT_LE(uncapped, memory_figures(kCpu).limit + cpu_memory_stats().allocated + cpu_memory_stats().cached);
  set_cpu_memory_cap(64 * core::kMiB);
  EXPECT_EQ(cpu_memory_stats().cache_bound, 64 * core::kMiB);  // a cap is the bound
  set_cpu_memory_cap(0);
  EXPECT_EQ(cpu_memory_stats().cache_bound, uncapped);
}

TEST(CpuBlockCache, SmallBlocksAreLeftToTheCLibrary) {
  install_counting_cpu_allocator();
  enable_cpu_block_cache(true);
  release_cpu_cache();
  { auto small = at::empty({1024}, at::kFloat); }  // 4 KiB
  EXPECT_EQ(cpu_memory_stats().cached, 0U);
}

TEST(CpuBlockCache, ReleaseAndDisableEmptyIt) {
  install_counting_cpu_allocator();
  enable_cpu_block_cache(true);
  release_cpu_cache();
  { auto t = at::empty({1024, 256}, at::kFloat); }
  EXPECT_EQ(release_cpu_cache(), core::kMiB);
  EXPECT_EQ(cpu_memory_stats().cached, 0U);
  { auto t = at::empty({1024, 256}, at::kFloat); }
  EXPECT_EQ(cpu_memory_stats().cached, core::kMiB);
  enable_cpu_block_cache(false);
  EXPECT_EQ(cpu_memory_stats().cached, 0U);
  { auto t = at::empty({1024, 256}, at::kFloat); }
  EXPECT_EQ(cpu_memory_stats().cached, 0U);
  enable_cpu_block_cache(true);
}

TEST(CpuBlockCache, CachedBlocksGiveWayBeforeTheCapRefusesATensor) {
  CapReset reset;
  install_counting_cpu_allocator();
  enable_cpu_block_cache(true);
  release_cpu_cache();
  {
    auto a = at::empty({2 * 1024, 256}, at::kFloat);  // 2 MiB each, then both cached
    auto b = at::empty({2 * 1024, 256}, at::kFloat);
  }
  EXPECT_EQ(cpu_memory_stats().cached, 4 * core::kMiB);
  // Live + cache + a new 3 MiB would pass the cap; live + 3 MiB alone does not.
  set_cpu_memory_cap(cpu_memory_stats().allocated + 5 * core::kMiB);
  EXPECT_LE(cpu_memory_stats().allocated + cpu_memory_stats().cached, cpu_memory_stats().cap);
  auto fits = at::empty({3 * 1024, 256}, at::kFloat);
  EXPECT_LE(cpu_memory_stats().allocated + cpu_memory_stats().cached, cpu_memory_stats().cap);
  EXPECT_LE(cpu_memory_stats().cached, 2 * core::kMiB);
}

TEST(DeviceMemory, CpuReservedCountsTheCache) {
  install_counting_cpu_allocator();
  enable_cpu_block_cache(true);
  release_cpu_cache();
  { auto t = at::empty({1024, 256}, at::kFloat); }
  auto figures = memory_figures(kCpu, /*with_limit=*/false);
  EXPECT_EQ(figures.reserved, figures.allocated + core::kMiB);
  release_cached_memory(kCpu);
  figures = memory_figures(kCpu, false);
  EXPECT_EQ(figures.reserved, figures.allocated);
}

TEST(DeviceMemory, CpuFiguresNameTheirLimit) {
  CapReset reset;
  install_counting_cpu_allocator();
  auto figures = memory_figures(kCpu);
  EXPECT_GT(figures.limit, 0U);
  EXPECT_TRUE(figures.limit_source == "available RAM" || figures.limit_source == "cgroup limit") << figures.limit_source;
  cap_memory(kCpu, 512 * core::kMiB);
  figures = memory_figures(kCpu);
  EXPECT_EQ(figures.limit, 512 * core::kMiB);
  EXPECT_EQ(figures.limit_source, "device.max_memory");
  EXPECT_NE(describe(figures).find("512.00 MiB (device.max_memory)"), std::string::npos) << describe(figures);
}

// An out-of-memory error's fix names what the limit was: device.max_memory only when it was that
// (under `ulimit -v` the fix said to raise device.max_memory, which was not set).
TEST(DeviceMemory, TheMoreMemoryFixNamesTheLimitThatWasMet) {
  MemoryFigures figures;
  EXPECT_EQ(more_memory_remedy(figures), "");
  const std::vector<std::pair<std::string, std::string>> cases{
      {"device.max_memory", "allow more memory (device.max_memory)"},
      {"address space left under `ulimit -v`", "raise this shell's address-space limit before starting gputrain (`ulimit -v unlimited`)"},
      {"cgroup limit", "give the container or job more memory (docker run --memory, the job's memory request)"},
      {"free GPU memory", "free GPU memory that other processes hold (nvidia-smi lists them)"},
      {"available RAM", "free RAM that other processes hold"}};
  for (const auto& [source, remedy] : cases) {
    figures.limit_source = source;
    EXPECT_EQ(more_memory_remedy(figures), remedy) << source;
  }
}

TEST(OomGuard, RunsOnceWhenNothingFails) {
  OomGuard guard(kCpu, 64, {});
  std::vector<std::int64_t> sizes;
  guard.run(
      0, 64, [&](std::int64_t micro) { sizes.push_back(micro); }, [] {});
  EXPECT_EQ(sizes, std::vector<std::int64_t>({64}));
  EXPECT_EQ(guard.oom_count(), 0);
  EXPECT_TRUE(guard.take_events().empty());
}

TEST(OomGuard, HalvesOnOomAndKeepsTheSmallerSize) {
  OomGuard guard(kCpu, 64, {});
  std::vector<std::int64_t> sizes;
  int discarded = 0;
  auto attempt = [&](std::int64_t micro) {
    sizes.push_back(micro);
    if (micro > 16) raise_oom();
  };
  guard.run(5, 64, attempt, [&] { ++discarded; });
  EXPECT_EQ(sizes, std::vector<std::int64_t>({64, 32, 16}));
  EXPECT_EQ(discarded, 2);
  EXPECT_EQ(guard.micro_batch(), 16);
  const auto events = guard.take_events();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].step, 5);
  EXPECT_EQ(events[0].old_micro_batch, 64);
  EXPECT_EQ(events[0].new_micro_batch, 32);
  EXPECT_EQ(events[1].new_micro_batch, 16);
  EXPECT_EQ(events[0].message, "simulated out of memory");  // the first line only
  EXPECT_EQ(events[0].phase, "train");
  // Each event knows how long the step took to complete after it; the first waited longest.
  EXPECT_GE(events[0].recovery_seconds, events[1].recovery_seconds);
  EXPECT_GE(events[1].recovery_seconds, 0);
  sizes.clear();
  guard.run(6, 64, attempt, [] {});
  EXPECT_EQ(sizes, std::vector<std::int64_t>({16}));  // no regrowth unless asked for
}

TEST(OomGuard, OtherErrorsPassThroughUntouched) {
  OomGuard guard(kCpu, 64, {});
  EXPECT_THROW(guard.run(
                   0, 64, [](std::int64_t) { throw std::runtime_error("not memory"); }, [] {}),
               std::runtime_error);
  EXPECT_THROW(guard.run(
                   0, 64, [](std::int64_t) { TORCH_CHECK(false, "shape mismatch"); }, [] {}),
               c10::Error);
  EXPECT_EQ(guard.oom_count(), 0);
  EXPECT_EQ(guard.micro_batch(), 64);
}

TEST(OomGuard, GivesUpAfterMaxHalvingsWithTheFigures) {
  OomGuard guard(kCpu, 64, {/*max_halvings=*/2, /*min_micro_batch=*/1, /*regrow_after=*/0});
  try {
    guard.run(
        9, 64, [](std::int64_t) { raise_oom(); }, [] {});
    FAIL() << "expected OomExhaustedError";
  } catch (const OomExhaustedError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("step 10"), std::string::npos) << message;
    EXPECT_NE(message.find("micro-batch of 16"), std::string::npos) << message;
    EXPECT_NE(message.find("oom.max_halvings (2)"), std::string::npos) << message;
    EXPECT_NE(message.find("allocated"), std::string::npos) << message;
    EXPECT_NE(e.remedy().find("train.grad_accum"), std::string::npos);
    EXPECT_EQ(e.exit_code(), ExitCode::failure);
    EXPECT_EQ(e.event().new_micro_batch, 0);
    EXPECT_EQ(e.event().recovery_seconds, -1);  // there was no recovery
  }
  EXPECT_EQ(guard.oom_count(), 3);  // 64 -> 32, 32 -> 16, then 16 gave up
}

TEST(OomGuard, RespectsTheMinimumMicroBatch) {
  OomGuard guard(kCpu, 64, {/*max_halvings=*/10, /*min_micro_batch=*/32, /*regrow_after=*/0});
  std::vector<std::int64_t> sizes;
  EXPECT_THROW(guard.run(
                   0, 64, [&](std::int64_t micro) { sizes.push_back(micro), raise_oom(); }, [] {}),
               OomExhaustedError);
  EXPECT_EQ(sizes, std::vector<std::int64_t>({64, 32}));
}

TEST(OomGuard, AShortLastBatchHalvesFromItsOwnSize) {
  OomGuard guard(kCpu, 64, {});
  std::vector<std::int64_t> sizes;
  guard.run(
      0, 20,
      [&](std::int64_t micro) {
        sizes.push_back(micro);
        if (micro > 10) raise_oom();
      },
      [] {});
  EXPECT_EQ(sizes, std::vector<std::int64_t>({64, 10}));  // 64 covers all 20 rows; half of 20 is 10
}

TEST(OomGuard, RegrowsAfterCleanStepsAndBacksOffWhenItStillFails) {
  OomGuard guard(kCpu, 64, {/*max_halvings=*/3, /*min_micro_batch=*/1, /*regrow_after=*/2});
  std::int64_t limit = 32;  // sizes above this fail
  std::vector<std::int64_t> sizes;
  auto attempt = [&](std::int64_t micro) {
    sizes.push_back(micro);
    if (micro > limit) raise_oom();
  };
  guard.run(0, 64, attempt, [] {});  // 64 fails -> 32
  guard.run(1, 64, attempt, [] {});  // clean 1
  guard.run(2, 64, attempt, [] {});  // clean 2
  sizes.clear();
  guard.run(3, 64, attempt, [] {});  // tries 64 again, fails, back to 32; next try waits 4 steps
  EXPECT_EQ(sizes, std::vector<std::int64_t>({64, 32}));
  auto events = guard.take_events();
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().regrow);
  limit = 64;  // memory was freed elsewhere
  for (int step = 4; step < 8; ++step) guard.run(step, 64, attempt, [] {});
  EXPECT_EQ(guard.micro_batch(), 32);  // 4 clean steps counted, the try comes next
  guard.run(8, 64, attempt, [] {});
  EXPECT_EQ(guard.micro_batch(), 64);
}

TEST(OomGuard, AgreementPicksTheSizeForAllRanks) {
  OomGuard guard(kCpu, 64, {});
  guard.set_agreement([](std::int64_t local) { return std::min<std::int64_t>(local, 16); });  // another rank is at 16
  std::vector<std::int64_t> sizes;
  guard.run(
      0, 64, [&](std::int64_t micro) { sizes.push_back(micro); }, [] {});
  EXPECT_EQ(sizes, std::vector<std::int64_t>({16}));
}

#include "cpu_dropout.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>

namespace gputrain::train {
namespace {

// The mask is drawn in blocks, each by 16 xoshiro128+ generators side by side (one per lane, so
// the compiler runs them in vector registers), seeded from the run's seed and the block's index
// by SplitMix64, as xoshiro's authors seed it. A block's mask depends only on the seed and its
// index, so the blocks could be filled in any order and by any number of threads. Only whether a
// draw is under a threshold is used, which its upper bits decide: xoshiro128+'s strong ones.
constexpr int kLanes = 16;
constexpr std::int64_t kBlock = 4096;

struct Lanes {
  std::uint32_t s0[kLanes], s1[kLanes], s2[kLanes], s3[kLanes];
};

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

Lanes seeded(std::uint64_t seed, std::uint64_t block) {
  Lanes lanes{};
  std::uint64_t x = seed ^ (block * 0xD1B54A32D192ED03ULL);
  for (int lane = 0; lane < kLanes; ++lane) {
    const auto a = splitmix64(x), b = splitmix64(x);
    lanes.s0[lane] = static_cast<std::uint32_t>(a);
    lanes.s1[lane] = static_cast<std::uint32_t>(a >> 32);
    lanes.s2[lane] = static_cast<std::uint32_t>(b);
    lanes.s3[lane] = static_cast<std::uint32_t>(b >> 32);
  }
  return lanes;
}

// One block: out[i] = scale where draw i is under keep_below, else 0. On x86-64 compiled for
// AVX-512, AVX2 and the baseline, and the loader picks the widest this processor runs (elsewhere,
// e.g. on an ARM Grace host, for the baseline, whose vectors the compiler uses as it can). Not
// under ThreadSanitizer: the loader runs the clones' resolver before the sanitizer's runtime is up.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define GPUTRAIN_WIDEST_VECTORS __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GPUTRAIN_WIDEST_VECTORS
#endif
GPUTRAIN_WIDEST_VECTORS void fill_block(Lanes& l, float* out, std::uint32_t keep_below, float scale) {
  for (std::int64_t step = 0; step < kBlock / kLanes; ++step) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const std::uint32_t draw = l.s0[lane] + l.s3[lane], t = l.s1[lane] << 9;
      l.s2[lane] ^= l.s0[lane];
      l.s3[lane] ^= l.s1[lane];
      l.s1[lane] ^= l.s2[lane];
      l.s0[lane] ^= l.s3[lane];
      l.s2[lane] ^= t;
      l.s3[lane] = (l.s3[lane] << 11) | (l.s3[lane] >> 21);
      out[step * kLanes + lane] = draw < keep_below ? scale : 0.0f;
    }
  }
}

std::uint64_t draw_seed() {
  auto* generator = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(generator->mutex_);
  return generator->random64();
}

}  // namespace

at::Tensor dropout_noise(const at::Tensor& like, double p) {
  auto out = at::empty(like.sizes(), like.options().memory_format(at::MemoryFormat::Contiguous));
  const auto seed = draw_seed();
  const auto keep_below = static_cast<std::uint32_t>(std::min(std::llround((1.0 - p) * 4294967296.0), 4294967295LL));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  float* data = out.data_ptr<float>();
  const std::int64_t n = out.numel(), blocks = (n + kBlock - 1) / kBlock;
  // On the calling thread. A second one drawing blocks (core::parallel_tasks) made the CPU
  // transformer 0.69x as fast on 2 cores (2026-11-29, docs/benchmarks.md): it competes with
  // LibTorch's OpenMP workers, which spin for a while after each parallel product.
  for (std::int64_t block = 0; block < blocks; ++block) {
    auto lanes = seeded(seed, static_cast<std::uint64_t>(block));
    const std::int64_t begin = block * kBlock, size = std::min(kBlock, n - begin);
    if (size == kBlock) {
      fill_block(lanes, data + begin, keep_below, scale);
    } else {  // the last, partial block
      float whole[kBlock] = {};
      fill_block(lanes, whole, keep_below, scale);
      std::copy(whole, whole + size, data + begin);
    }
  }
  return out;
}

at::Tensor cpu_dropout(const at::Tensor& input, double p, bool training) {
  if (!training || p == 0.0) return input;
  if (!input.device().is_cpu() || input.scalar_type() != at::kFloat || p >= 1.0) return at::dropout(input, p, training);
  return input * dropout_noise(input, p);  // autograd keeps the noise for backward, as at::dropout's CPU path does
}

}  // namespace gputrain::train

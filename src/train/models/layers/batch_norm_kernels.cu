// Batch norm's training passes over NHWC rows (batch_norm_kernels.hpp). A thread owns 8 channels
// of a row (one 16-byte load) and walks rows with the grid's stride, so its channels, and their
// per-channel constants in registers, never change. Forward: Welford statistics per thread,
// combined per block (Chan et al.), then over blocks by a small kernel (batch_norm_moments.hpp)
// that also updates the running statistics; then one pass normalise (+ residual) (+ ReLU).
// Backward: one pass sums g and g * (x - mean) (g: the output gradient, a forked output's two
// added, through ReLU's mask), a small kernel turns the sums into per-channel coefficients, and
// one pass writes dx = a * g + b * (x - mean) + d. The reductions issue several rows' loads before using any:
// with only a few blocks a multiprocessor, one 16-byte load in flight a thread left HBM a third
// used. No atomics: the same launch on the same GPU gives the same bits, as train.deterministic wants.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "batch_norm_kernels.hpp"
#include "batch_norm_moments.hpp"

namespace gputrain::train::batch_norm_kernels {
namespace {

constexpr int kThreads = Plan::kThreads;
constexpr int kVector = Plan::kVector;              // elements per 16-byte load
constexpr int kFinalLanes = 8, kFinalSlices = 128;  // the combining kernels' block: channels x partial slices
// The plan puts kReductionBlocksPerSm reduction blocks on each multiprocessor: all must fit at once
// (64 registers a thread), or the last ones would run as a second wave.
constexpr int kReductionBlocksPerSm = Plan::kReductionBlocksPerSm;
constexpr int kStatisticsRowsInFlight = 4;  // one input a row: 4 loads in flight a thread
// Up to three inputs a row: two rows' 6 loads fit in 64 registers, unless the row's masked
// gradient is also stored (ReLU after a residual add), whose addresses then spill: one row there.
template <bool kWriteGradient>
constexpr int kGradientRowsInFlight = kWriteGradient ? 1 : 2;

template <typename T>
struct Pair;
template <>
struct Pair<__nv_bfloat16> {
  using Type = __nv_bfloat162;
  static __device__ float2 to_float(Type v) { return __bfloat1622float2(v); }
  static __device__ Type from_float(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <>
struct Pair<__half> {
  using Type = __half2;
  static __device__ float2 to_float(Type v) { return __half22float2(v); }
  static __device__ Type from_float(float a, float b) { return __floats2half2_rn(a, b); }
};

template <typename T>
__device__ inline uint4 load_raw(const T* from) {
  return __ldg(reinterpret_cast<const uint4*>(from));
}

template <typename T>
__device__ inline void unpack8(const uint4& raw, float (&v)[kVector]) {
  const auto* pairs = reinterpret_cast<const typename Pair<T>::Type*>(&raw);
#pragma unroll
  for (int i = 0; i < kVector / 2; ++i) {
    const float2 f = Pair<T>::to_float(pairs[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

template <typename T>
__device__ inline void load8(const T* from, float (&v)[kVector]) {
  unpack8<T>(load_raw(from), v);
}

template <typename T>
__device__ inline void store8(T* to, const float (&v)[kVector]) {
  uint4 raw;
  auto* pairs = reinterpret_cast<typename Pair<T>::Type*>(&raw);
#pragma unroll
  for (int i = 0; i < kVector / 2; ++i) pairs[i] = Pair<T>::from_float(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(to) = raw;
}

// Where a thread sits: its 8 channels (group), its row within the block's rows, and the stride.
struct Walk {
  int group, row_in_block, rows_per_block;
  __device__ Walk(int channels) {
    const int groups = channels / kVector;
    group = static_cast<int>(threadIdx.x) % groups;
    row_in_block = static_cast<int>(threadIdx.x) / groups;
    rows_per_block = static_cast<int>(blockDim.x) / groups;
  }
  __device__ std::int64_t first() const { return static_cast<std::int64_t>(blockIdx.x) * rows_per_block + row_in_block; }
  __device__ std::int64_t stride() const { return static_cast<std::int64_t>(gridDim.x) * rows_per_block; }
};

// Folds (n_b, mean_b, m2_b) into (n, mean, m2): Chan et al.'s pairwise update; n is shared by the 8.
__device__ inline void combine(float& n, float (&mean)[kVector], float (&m2)[kVector], float n_b, const float* mean_b, const float* m2_b) {
  if (n_b == 0.f) return;
  const float total = n + n_b, weight_b = n_b / total, cross = n * n_b / total;
#pragma unroll
  for (int k = 0; k < kVector; ++k) {
    const float delta = mean_b[k] - mean[k];
    mean[k] += delta * weight_b;
    m2[k] += m2_b[k] + delta * delta * cross;
  }
  n = total;
}

// Tree over the block's rows, threads of one channel group pairing up; afterwards the threads with
// row_in_block 0 hold the block's figures. `Fold(own, other_index)` folds shared slot other_index
// into the thread's own registers and slot.
template <typename Fold>
__device__ inline void fold_block_rows(const Walk& walk, Fold fold) {
  for (int active = walk.rows_per_block; active > 1;) {
    const int half = (active + 1) / 2;
    __syncthreads();
    if (walk.row_in_block < active - half)
      fold(static_cast<int>(threadIdx.x) + half * (static_cast<int>(blockDim.x) / walk.rows_per_block));
    active = half;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, kReductionBlocksPerSm)
    statistics_partials(const T* __restrict__ x, std::int64_t rows, int channels, float* __restrict__ part_mean,
                        float* __restrict__ part_m2, float* __restrict__ part_count) {
  __shared__ float s_mean[kThreads * kVector], s_m2[kThreads * kVector], s_n[kThreads];
  const Walk walk(channels);
  float n = 0.f, mean[kVector] = {}, m2[kVector] = {};
  uint4 raw[kStatisticsRowsInFlight];
  walk_rows<kStatisticsRowsInFlight>(
      walk.first(), walk.stride(), rows, [&](int u, std::int64_t r) { raw[u] = load_raw(x + r * channels + walk.group * kVector); },
      [&](int u, std::int64_t) {
        float v[kVector];
        unpack8<T>(raw[u], v);
        n += 1.f;
        const float inverse = 1.f / n;  // one division for the 8 channels
#pragma unroll
        for (int k = 0; k < kVector; ++k) {
          const float delta = v[k] - mean[k];
          mean[k] += delta * inverse;
          m2[k] += delta * (v[k] - mean[k]);
        }
      });
  const int self = static_cast<int>(threadIdx.x);
  s_n[self] = n;
#pragma unroll
  for (int k = 0; k < kVector; ++k) s_mean[self * kVector + k] = mean[k], s_m2[self * kVector + k] = m2[k];
  fold_block_rows(walk, [&](int other) {
    combine(n, mean, m2, s_n[other], s_mean + other * kVector, s_m2 + other * kVector);
    s_n[self] = n;
#pragma unroll
    for (int k = 0; k < kVector; ++k) s_mean[self * kVector + k] = mean[k], s_m2[self * kVector + k] = m2[k];
  });
  if (walk.row_in_block != 0) return;
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * channels + walk.group * kVector;
#pragma unroll
  for (int k = 0; k < kVector; ++k) part_mean[at + k] = mean[k], part_m2[at + k] = m2[k];
  if (walk.group == 0) part_count[blockIdx.x] = n;
}

// The combining kernels' block is (kFinalLanes, kFinalSlices): lane = channel, slice = every
// kFinalSlices-th reduction block's partial, a few a thread, loaded together (many slices: the
// loads' latency, not their bytes, is what such a kernel waits for). A warp holds 4 slices of the
// 8 lanes: shuffles sum those, then warp 0 sums the warps' sums.
constexpr int kFinalWarps = kFinalLanes * kFinalSlices / 32;
static_assert(kFinalLanes == 8 && kFinalWarps == 32, "a warp is 4 slices of 8 lanes, and warp 0 sums the 32 warps' sums");

// Each lane's values summed over the block's slices: the totals are on the threads of slice 0.
// Every thread of the block calls it.
template <int kQuantities>
__device__ inline void sum_slices(float (&v)[kQuantities], float (&shared)[kQuantities][kFinalWarps][kFinalLanes]) {
  const int lane = static_cast<int>(threadIdx.x), slice = static_cast<int>(threadIdx.y), warp = slice / 4;
  const auto fold_warp_slices = [&] {
#pragma unroll
    for (int q = 0; q < kQuantities; ++q) {
      v[q] += __shfl_xor_sync(0xffffffffu, v[q], 8);  // 8 and 16 threads apart: the next slices, same lane
      v[q] += __shfl_xor_sync(0xffffffffu, v[q], 16);
    }
  };
  fold_warp_slices();
  if (slice % 4 == 0) {
#pragma unroll
    for (int q = 0; q < kQuantities; ++q) shared[q][warp][lane] = v[q];
  }
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int q = 0; q < kQuantities; ++q) {
    v[q] = 0.f;
    for (int w = slice; w < kFinalWarps; w += 4) v[q] += shared[q][w][lane];
  }
  fold_warp_slices();
}

__global__ void __launch_bounds__(kFinalLanes* kFinalSlices)
    statistics_final(const float* __restrict__ part_mean, const float* __restrict__ part_m2, const float* __restrict__ part_count,
                     int blocks, int channels, Forward args, float* __restrict__ scale, float* __restrict__ shift) {
  __shared__ float s_sums[3][kFinalWarps][kFinalLanes];
  const int slice = static_cast<int>(threadIdx.y), c = static_cast<int>(blockIdx.x) * kFinalLanes + static_cast<int>(threadIdx.x);
  if (args.batches_tracked != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && slice == 0) *args.batches_tracked += 1;
  ShiftedSums sums;
  const float about = c < channels ? part_mean[c] : 0.f;  // block 0's mean: every block has rows
  if (c < channels) {
#pragma unroll 4
    for (int b = slice; b < blocks; b += kFinalSlices) {
      const std::int64_t at = static_cast<std::int64_t>(b) * channels + c;
      add_partial(sums, part_count[b], part_mean[at], part_m2[at], about);
    }
  }
  float v[3] = {sums.count, sums.shifted, sums.squares};
  sum_slices(v, s_sums);
  if (slice != 0 || c >= channels) return;
  const ShiftedSums total{v[0], v[1], v[2]};
  const float n = total.count;
  const Moments moments = moments_of(total, about);
  const float mean = moments.mean, var = moments.squares / n, invstd = 1.f / sqrtf(var + static_cast<float>(args.eps));
  args.save_mean[c] = mean;
  args.save_invstd[c] = invstd;
  if (args.running_mean != nullptr) {
    const float momentum = static_cast<float>(args.momentum);
    args.running_mean[c] = (1.f - momentum) * args.running_mean[c] + momentum * mean;
    args.running_var[c] = (1.f - momentum) * args.running_var[c] + momentum * (moments.squares / (n - 1.f));  // unbiased, as ATen keeps it
  }
  const float w = args.weight != nullptr ? args.weight[c] : 1.f, b = args.bias != nullptr ? args.bias[c] : 0.f;
  scale[c] = w * invstd;
  shift[c] = b - mean * w * invstd;
}

template <typename T, bool kResidual, bool kRelu>
__global__ void __launch_bounds__(kThreads)
    normalise(const T* __restrict__ x, const T* __restrict__ residual, T* __restrict__ y, std::int64_t rows, int channels,
              const float* __restrict__ scale, const float* __restrict__ shift) {
  const Walk walk(channels);
  float a[kVector], b[kVector];
#pragma unroll
  for (int k = 0; k < kVector; ++k) a[k] = scale[walk.group * kVector + k], b[k] = shift[walk.group * kVector + k];
  for (std::int64_t r = walk.first(); r < rows; r += walk.stride()) {
    const std::int64_t at = r * channels + walk.group * kVector;
    float v[kVector], add[kVector];
    load8(x + at, v);
    if (kResidual) load8(residual + at, add);
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      v[k] = v[k] * a[k] + b[k];
      if (kResidual) v[k] += add[k];
      if (kRelu) v[k] = fmaxf(v[k], 0.f);
    }
    store8(y + at, v);
  }
}

// The output gradient through ReLU's mask (the output is positive where ReLU passed its input).
template <typename T>
__device__ inline void mask_by_output(const uint4& raw_output, float (&g)[kVector]) {
  float out[kVector];
  unpack8<T>(raw_output, out);
#pragma unroll
  for (int k = 0; k < kVector; ++k) g[k] = out[k] > 0.f ? g[k] : 0.f;
}

template <typename T, bool kRelu>
__device__ inline void masked_gradient(const T* dy, const T* y, std::int64_t at, float (&g)[kVector]) {
  load8(dy + at, g);
  if (kRelu) mask_by_output<T>(load_raw(y + at), g);
}

// g += the second reader's gradient, rounded to T: the sum autograd's add of the two would make.
template <typename T>
__device__ inline void add_rounded(const uint4& raw_other, float (&g)[kVector]) {
  float other[kVector];
  unpack8<T>(raw_other, other);
#pragma unroll
  for (int k = 0; k < kVector; ++k) g[k] += other[k];
  uint4 raw;
  auto* pairs = reinterpret_cast<typename Pair<T>::Type*>(&raw);
#pragma unroll
  for (int i = 0; i < kVector / 2; ++i) pairs[i] = Pair<T>::from_float(g[2 * i], g[2 * i + 1]);
  unpack8<T>(raw, g);
}

// kSecond: a forked output's two gradients, dy and dy2, summed (only with kWriteGradient, whose
// one row in flight leaves the registers for the fourth load).
template <typename T, bool kRelu, bool kWriteGradient, bool kSecond>
__global__ void __launch_bounds__(kThreads, kReductionBlocksPerSm)
    gradient_partials(const T* __restrict__ dy, const T* __restrict__ dy2, const T* __restrict__ y, const T* __restrict__ x,
                      T* __restrict__ g_out, std::int64_t rows, int channels, const float* __restrict__ mean, float* __restrict__ part_g,
                      float* __restrict__ part_gx) {
  static_assert(!kSecond || kWriteGradient, "the summed gradient is written for the last pass");
  __shared__ float s_g[kThreads * kVector], s_gx[kThreads * kVector];
  const Walk walk(channels);
  float mu[kVector], sum_g[kVector] = {}, sum_gx[kVector] = {};
#pragma unroll
  for (int k = 0; k < kVector; ++k) mu[k] = mean[walk.group * kVector + k];
  constexpr int kRows = kGradientRowsInFlight<kWriteGradient>;
  uint4 raw_dy[kRows], raw_dy2[kRows], raw_y[kRows], raw_x[kRows];
  const auto at_row = [&](std::int64_t r) { return r * channels + walk.group * kVector; };
  walk_rows<kRows>(
      walk.first(), walk.stride(), rows,
      [&](int u, std::int64_t r) {
        raw_dy[u] = load_raw(dy + at_row(r)), raw_x[u] = load_raw(x + at_row(r));
        if (kSecond) raw_dy2[u] = load_raw(dy2 + at_row(r));
        if (kRelu) raw_y[u] = load_raw(y + at_row(r));
      },
      [&](int u, std::int64_t r) {
        float g[kVector], v[kVector];
        unpack8<T>(raw_dy[u], g);
        if (kSecond) add_rounded<T>(raw_dy2[u], g);
        if (kRelu) mask_by_output<T>(raw_y[u], g);
        unpack8<T>(raw_x[u], v);
#pragma unroll
        for (int k = 0; k < kVector; ++k) sum_g[k] += g[k], sum_gx[k] += g[k] * (v[k] - mu[k]);
        if (kWriteGradient) store8(g_out + at_row(r), g);
      });
  const int self = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int k = 0; k < kVector; ++k) s_g[self * kVector + k] = sum_g[k], s_gx[self * kVector + k] = sum_gx[k];
  fold_block_rows(walk, [&](int other) {
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      sum_g[k] += s_g[other * kVector + k], sum_gx[k] += s_gx[other * kVector + k];
      s_g[self * kVector + k] = sum_g[k], s_gx[self * kVector + k] = sum_gx[k];
    }
  });
  if (walk.row_in_block != 0) return;
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * channels + walk.group * kVector;
#pragma unroll
  for (int k = 0; k < kVector; ++k) part_g[at + k] = sum_g[k], part_gx[at + k] = sum_gx[k];
}

// dx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)))
//    = a * g + b * (x - mean) + d, per channel. The block as statistics_final's.
__global__ void __launch_bounds__(kFinalLanes* kFinalSlices)
    gradient_final(const float* __restrict__ part_g, const float* __restrict__ part_gx, int blocks, std::int64_t rows, int channels,
                   Backward args, float* __restrict__ coefficients) {
  __shared__ float s_sums[2][kFinalWarps][kFinalLanes];
  const int slice = static_cast<int>(threadIdx.y), c = static_cast<int>(blockIdx.x) * kFinalLanes + static_cast<int>(threadIdx.x);
  float v[2] = {0.f, 0.f};
  if (c < channels) {
#pragma unroll 4
    for (int b = slice; b < blocks; b += kFinalSlices) {
      const std::int64_t at = static_cast<std::int64_t>(b) * channels + c;
      v[0] += part_g[at], v[1] += part_gx[at];
    }
  }
  sum_slices(v, s_sums);
  if (slice != 0 || c >= channels) return;
  const float sum_g = v[0], sum_gx = v[1];
  const float invstd = args.save_invstd[c], w = args.weight != nullptr ? args.weight[c] : 1.f;
  const float count = static_cast<float>(rows), a = w * invstd;
  args.grad_weight[c] = sum_gx * invstd;
  args.grad_bias[c] = sum_g;
  coefficients[c] = a;
  coefficients[channels + c] = -a * invstd * invstd * (sum_gx / count);
  coefficients[2 * channels + c] = -a * (sum_g / count);
}

template <typename T, bool kRelu, bool kGradientWritten>
__global__ void __launch_bounds__(kThreads) input_gradient(const T* __restrict__ dy, const T* __restrict__ y, const T* __restrict__ g_in,
                                                           const T* __restrict__ x, T* __restrict__ dx, std::int64_t rows, int channels,
                                                           const float* __restrict__ mean, const float* __restrict__ coefficients) {
  const Walk walk(channels);
  float mu[kVector], a[kVector], b[kVector], d[kVector];
#pragma unroll
  for (int k = 0; k < kVector; ++k) {
    const int c = walk.group * kVector + k;
    mu[k] = mean[c], a[k] = coefficients[c], b[k] = coefficients[channels + c], d[k] = coefficients[2 * channels + c];
  }
  for (std::int64_t r = walk.first(); r < rows; r += walk.stride()) {
    const std::int64_t at = r * channels + walk.group * kVector;
    float g[kVector], v[kVector];
    if (kGradientWritten)
      load8(g_in + at, g);
    else
      masked_gradient<T, kRelu>(dy, y, at, g);
    load8(x + at, v);
#pragma unroll
    for (int k = 0; k < kVector; ++k) v[k] = a[k] * g[k] + b[k] * (v[k] - mu[k]) + d[k];
    store8(dx + at, v);
  }
}

const char* launched() {
  const auto e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

template <typename T>
void forward_passes(const Layout& layout, const Forward& args, const Plan& grid, float* workspace, cudaStream_t stream) {
  const auto channels = layout.channels;
  const std::int64_t partials = std::int64_t{grid.reduction_blocks} * channels;
  float *part_mean = workspace, *part_m2 = part_mean + partials, *part_count = part_m2 + partials;
  float *scale = part_count + grid.reduction_blocks, *shift = scale + channels;
  const auto* x = static_cast<const T*>(args.input);
  statistics_partials<T><<<grid.reduction_blocks, grid.threads, 0, stream>>>(x, layout.rows, channels, part_mean, part_m2, part_count);
  const dim3 final_block(kFinalLanes, kFinalSlices);
  statistics_final<<<(channels + kFinalLanes - 1) / kFinalLanes, final_block, 0, stream>>>(
      part_mean, part_m2, part_count, grid.reduction_blocks, channels, args, scale, shift);
  const auto* residual = static_cast<const T*>(args.residual);
  auto* y = static_cast<T*>(args.output);
  const auto launch = [&](auto kernel) {
    kernel<<<grid.elementwise_blocks, grid.threads, 0, stream>>>(x, residual, y, layout.rows, channels, scale, shift);
  };
  if (residual != nullptr)
    args.relu ? launch(normalise<T, true, true>) : launch(normalise<T, true, false>);
  else
    args.relu ? launch(normalise<T, false, true>) : launch(normalise<T, false, false>);
}

template <typename T>
void backward_passes(const Layout& layout, const Backward& args, const Plan& grid, float* workspace, cudaStream_t stream) {
  const auto channels = layout.channels;
  const std::int64_t partials = std::int64_t{grid.reduction_blocks} * channels;
  float *part_g = workspace, *part_gx = part_g + partials, *coefficients = part_gx + partials;
  const auto* dy = static_cast<const T*>(args.grad_output);
  const auto* y = static_cast<const T*>(args.output);
  const auto* x = static_cast<const T*>(args.input);
  const auto* dy2 = static_cast<const T*>(args.grad_output_other);
  auto* g = static_cast<T*>(args.grad_residual);
  const bool write_g = args.relu && g != nullptr;  // the masked gradient, read back by the last pass
  const auto reduce = [&](auto kernel) {
    kernel<<<grid.reduction_blocks, grid.threads, 0, stream>>>(dy, dy2, y, x, g, layout.rows, channels, args.save_mean, part_g, part_gx);
  };
  if (write_g && dy2 != nullptr)
    reduce(gradient_partials<T, true, true, true>);
  else if (write_g)
    reduce(gradient_partials<T, true, true, false>);
  else
    args.relu ? reduce(gradient_partials<T, true, false, false>) : reduce(gradient_partials<T, false, false, false>);
  const dim3 final_block(kFinalLanes, kFinalSlices);
  gradient_final<<<(channels + kFinalLanes - 1) / kFinalLanes, final_block, 0, stream>>>(part_g, part_gx, grid.reduction_blocks,
                                                                                         layout.rows, channels, args, coefficients);
  const auto apply = [&](auto kernel) {
    kernel<<<grid.elementwise_blocks, grid.threads, 0, stream>>>(dy, y, g, x, static_cast<T*>(args.grad_input), layout.rows, channels,
                                                                 args.save_mean, coefficients);
  };
  if (write_g)
    apply(input_gradient<T, true, true>);
  else
    args.relu ? apply(input_gradient<T, true, false>) : apply(input_gradient<T, false, false>);
}

}  // namespace

const char* plan_on_device(const Layout& layout, Plan& plan) {
  int device = 0, multiprocessors = 1;
  if (const auto e = cudaGetDevice(&device); e != cudaSuccess) return cudaGetErrorString(e);
  if (const auto e = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
    return cudaGetErrorString(e);
  plan = plan_for(layout, multiprocessors);
  return nullptr;
}

namespace {

// The passes for the layout's element type, on the current device's plan.
template <typename Args, typename Bf16Passes, typename HalfPasses>
const char* launch(const Layout& layout, const Args& args, float* workspace, void* stream, Bf16Passes bf16, HalfPasses half) {
  Plan plan;
  if (const char* e = plan_on_device(layout, plan)) return e;
  auto* on = static_cast<cudaStream_t>(stream);
  if (layout.element == Element::bfloat16)
    bf16(layout, args, plan, workspace, on);
  else
    half(layout, args, plan, workspace, on);
  return launched();
}

}  // namespace

const char* forward(const Layout& layout, const Forward& args, float* workspace, void* stream) {
  return launch(layout, args, workspace, stream, forward_passes<__nv_bfloat16>, forward_passes<__half>);
}

const char* backward(const Layout& layout, const Backward& args, float* workspace, void* stream) {
  return launch(layout, args, workspace, stream, backward_passes<__nv_bfloat16>, backward_passes<__half>);
}

}  // namespace gputrain::train::batch_norm_kernels

// The VRAM cache's gather as one CUDA kernel: a chunk's inputs and targets in one launch, each row
// moved as the widest word it allows (16 bytes for most rows). LibTorch's index_select moves one
// element per thread with generic index arithmetic, and the two it took per chunk (inputs, targets)
// cost two launches of host work: on an H200 that gathered at 41-47 % of the device-to-device
// copy's bandwidth (docs/benchmarks.md), short of issue #5's 50 %.
#ifdef NDEBUG
#undef NDEBUG  // the kernel's index check is an assert, and must stay in Release builds
#endif
#include <cuda_runtime.h>
#include <cassert>

#include <algorithm>

#include "row_gather.hpp"

namespace gputrain::data::row_gather {
namespace {

constexpr int kThreads = 256;
// A multiprocessor holds at most 8 blocks of kThreads (2048 threads on sm_80, sm_90 and sm_100,
// fewer on the others): a grid of two such waves keeps every one busy until the last rows, and the
// grid-stride loop covers whatever is left beyond it.
constexpr int kBlocksPerMultiprocessor = 16;

struct Tables {
  Table first, second;
};

// blockIdx.y picks the table. Selecting it by value keeps it in registers (an indexed kernel
// parameter would be copied to local memory).
template <typename Index>
__global__ void __launch_bounds__(kThreads) gather_kernel(Tables tables, const std::int64_t* __restrict__ indices, Index rows) {
  const Table table = blockIdx.y == 0 ? tables.first : tables.second;
  copy_thread_words<Index>(table, indices, rows, static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x,
                           static_cast<Index>(gridDim.x) * blockDim.x);
}

}  // namespace

const char* gather_rows_on_gpu(const Table* tables, int count, const std::int64_t* indices, std::int64_t rows, void* stream) {
  if (count < 1 || count > kMaxTables) return "row_gather: between 1 and 2 tables a launch";
  std::int64_t most_words = 0;
  for (int t = 0; t < count; ++t) most_words = std::max(most_words, rows * tables[t].row_words);
  if (most_words == 0) return nullptr;
  int device = 0, multiprocessors = 1;
  if (const auto e = cudaGetDevice(&device); e != cudaSuccess) return cudaGetErrorString(e);
  if (const auto e = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
    return cudaGetErrorString(e);
  const std::int64_t blocks =
      std::min<std::int64_t>((most_words + kThreads - 1) / kThreads, std::int64_t{multiprocessors} * kBlocksPerMultiprocessor);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(count));
  const Tables both{tables[0], count > 1 ? tables[1] : Table{}};
  auto* on = static_cast<cudaStream_t>(stream);
  if (fits_32_bits(tables, count, rows))
    gather_kernel<unsigned><<<grid, kThreads, 0, on>>>(both, indices, static_cast<unsigned>(rows));
  else
    gather_kernel<unsigned long long><<<grid, kThreads, 0, on>>>(both, indices, static_cast<unsigned long long>(rows));
  const auto e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace gputrain::data::row_gather

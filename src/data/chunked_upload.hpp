#pragma once
// A host table's copy to the GPU through pinned chunks: from pageable memory CUDA copies at a
// sixth of the bus's rate (8.5 against 53 GB/s on the H200's PCIe 5), one thread staging it.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace gputrain::data {

/// The bytes of rows each chunk stages: a few chunks cover a small table, and the host allocator
/// keeps a handful of these blocks for the next table (validation's) to reuse.
inline constexpr std::uint64_t kUploadChunkBytes = 32ull << 20;

/// `host` as a contiguous tensor on `device`. From the CPU to a GPU its rows go through
/// copy_rows_in_chunks, pinned; anything else is `host.to(device)` (`host` itself when it is
/// there already). Returns before the last copy ends (queued on the current stream).
at::Tensor upload_in_chunks(const at::Tensor& host, c10::Device device, std::uint64_t chunk_bytes = kUploadChunkBytes);

/// `rows` (contiguous, on the CPU) into `out` (their shape and dtype, on any device), in chunks
/// of at most `chunk_bytes` of rows (at least one row): each copied by LibTorch's threads into
/// staging memory (pinned when `pinned`), then sent with an asynchronous copy that overlaps the
/// next chunk's staging. The host allocator keeps a pinned chunk until its copy has run, so none
/// is overwritten early.
void copy_rows_in_chunks(const at::Tensor& rows, at::Tensor& out, std::uint64_t chunk_bytes, bool pinned);

}  // namespace gputrain::data

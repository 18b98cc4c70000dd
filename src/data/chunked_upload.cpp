#include "chunked_upload.hpp"

#include <ATen/ATen.h>

#include <algorithm>

namespace gputrain::data {

void copy_rows_in_chunks(const at::Tensor& rows, at::Tensor& out, std::uint64_t chunk_bytes, bool pinned) {
  const std::int64_t n = rows.dim() == 0 ? 0 : rows.size(0);
  if (n == 0) return;
  const auto row_bytes = static_cast<std::uint64_t>(rows.numel() / n) * rows.element_size();
  const auto per_chunk = row_bytes == 0 ? n : static_cast<std::int64_t>(std::max<std::uint64_t>(1, chunk_bytes / row_bytes));
  const auto staging = rows.options().pinned_memory(pinned);
  for (std::int64_t first = 0; first < n; first += per_chunk) {
    const auto count = std::min(per_chunk, n - first);
    const auto from = rows.slice(0, first, first + count);
    auto staged = at::empty(from.sizes(), staging);
    staged.copy_(from);
    out.slice(0, first, first + count).copy_(staged, /*non_blocking=*/true);
  }
}

at::Tensor upload_in_chunks(const at::Tensor& host, c10::Device device, std::uint64_t chunk_bytes) {
  if (!host.is_cpu() || !device.is_cuda() || host.dim() == 0) return host.to(device);
  const auto rows = host.contiguous();
  auto out = at::empty(rows.sizes(), rows.options().device(device));
  copy_rows_in_chunks(rows, out, chunk_bytes, /*pinned=*/true);
  return out;
}

}  // namespace gputrain::data

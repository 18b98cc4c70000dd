#include "widen_unsigned.hpp"

#include <ATen/ATen.h>

#include <cstdint>

#include "gputrain/core/error.hpp"

namespace gputrain::data {

bool is_wide_unsigned(at::ScalarType type) { return type == at::kUInt16 || type == at::kUInt32 || type == at::kUInt64; }

at::Tensor widen_unsigned(const at::Tensor& t, const std::string& what) {
  if (t.scalar_type() == at::kUInt16) return t.to(at::kInt);
  if (t.scalar_type() == at::kUInt32) return t.to(at::kLong);
  if (t.scalar_type() != at::kUInt64) return t;
  const auto flat = t.contiguous();
  const auto* v = flat.const_data_ptr<std::uint64_t>();
  for (std::int64_t i = 0; i < flat.numel(); ++i)
    if (v[i] > static_cast<std::uint64_t>(INT64_MAX))
      throw UsageError(what + " holds uint64 values above 2^63-1 (e.g. " + std::to_string(v[i]) + ")", "save it as float64 or int64");
  return flat.view(at::kLong);
}

}  // namespace gputrain::data

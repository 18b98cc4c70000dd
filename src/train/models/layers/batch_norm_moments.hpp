#pragma once
// How batch_norm_kernels.cu combines the reduction blocks' partial statistics of one channel, in
// one pass with no division per partial: the sums are taken about a shift, block 0's mean. Both
// nvcc (the kernels) and the host compiler (tests/unit/train/test_batch_norm_moments.cpp) build it.
//
// Why a shift: plain sums of n * mean and n * mean^2 lose the variance to cancellation when the
// mean is large against the spread; about a value near the mean they do not. Why not Chan's
// pairwise update: its divisions made the combining kernel a chain of dependent steps.

#include "core/host_device.hpp"

namespace gputrain::train::batch_norm_kernels {

/// Sums over partials (count n_b, mean m_b, squares about it q_b), with d_b = m_b - shift:
/// count = sum n_b, shifted = sum n_b * d_b, squares = sum (q_b + n_b * d_b^2).
struct ShiftedSums {
  float count = 0.f, shifted = 0.f, squares = 0.f;
};

GPUTRAIN_HOST_DEVICE inline void add_partial(ShiftedSums& sums, float count, float mean, float squares, float shift) {
  const float d = mean - shift;
  sums.count += count;
  sums.shifted += count * d;
  sums.squares += squares + count * d * d;
}

GPUTRAIN_HOST_DEVICE inline void add_sums(ShiftedSums& sums, const ShiftedSums& other) {
  sums.count += other.count;
  sums.shifted += other.shifted;
  sums.squares += other.squares;
}

/// The whole's mean and squares about it: sum (q_b + n_b (m_b - mean)^2) = squares - shifted^2 / count.
struct Moments {
  float mean = 0.f, squares = 0.f;
};

GPUTRAIN_HOST_DEVICE inline Moments moments_of(const ShiftedSums& sums, float shift) {
  const float offset = sums.shifted / sums.count;
  const float squares = sums.squares - sums.shifted * offset;
  return {shift + offset, squares > 0.f ? squares : 0.f};  // rounding may leave a constant channel's a hair below 0
}

}  // namespace gputrain::train::batch_norm_kernels

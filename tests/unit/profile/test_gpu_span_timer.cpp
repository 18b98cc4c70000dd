// The GPU span timer off a GPU: nothing to time, nothing recorded, no CUDA call made (CI has no
// GPU; the timing itself is tests/gpu/test_gpu_profile.cpp).
#include <gtest/gtest.h>

#include "gputrain/profile/gpu_span_timer.hpp"

using namespace gputrain::profile;

TEST(GpuSpanTimer, OnTheCpuSpansAreNotTimed) {
  GpuSpanTimer timer(c10::Device(c10::kCPU));
  timer.begin();
  timer.end();
  EXPECT_EQ(timer.spans(), 0);
  EXPECT_EQ(timer.seconds(), 0.0);
}

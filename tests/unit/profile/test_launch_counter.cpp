// profile --step's launch counts: which CUDA runtime and driver calls are launches, and the counter
// on a machine without a GPU (the counting itself is tests/gpu/test_gpu_profile.cpp).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "profile/launch_counter.hpp"

using namespace gputrain::profile;

TEST(LaunchCounter, KernelAndGraphLaunchesAreToldByTheirApiNames) {
  for (const char* name : {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC_v11060", "cuLaunchKernel", "cuLaunchKernelEx",
                           "cudaLaunchCooperativeKernel"})
    EXPECT_EQ(launch_call_of(name), LaunchCall::kernel) << name;
  for (const char* name : {"cudaGraphLaunch", "cudaGraphLaunch_v10000", "cuGraphLaunch"})
    EXPECT_EQ(launch_call_of(name), LaunchCall::graph) << name;
  for (const char* name : {"cudaLaunchHostFunc", "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaEventRecord", "cudaGraphInstantiate", ""})
    EXPECT_EQ(launch_call_of(name), LaunchCall::none) << name;
}

// No GPU, no kernels: no counts, and a reason the command prints in their place.
TEST(LaunchCounter, WithoutAGpuThereAreNoCountsAndItSaysWhy) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA GPU is visible: tests/gpu/test_gpu_profile.cpp counts on it";
  LaunchCounter counter;
  const auto cpu_work = at::ones({64, 64}).matmul(at::ones({64, 64})).sum();
  EXPECT_EQ(cpu_work.item<float>(), 64.f * 64 * 64);
  EXPECT_FALSE(counter.stop().has_value());
  EXPECT_FALSE(counter.why().empty());
  EXPECT_FALSE(counter.stop().has_value()) << "a second stop is harmless";
}

// How busy the GPU was: the union of its kernels' and copies' spans over the time from the first
// start to the last end. Spans on several streams overlap and count once; gaps count as idle.
TEST(LaunchCounter, BusyShareIsTheUnionOfTheSpansOverTheirWindow) {
  EXPECT_FALSE(busy_share({}).has_value());
  EXPECT_FALSE(busy_share({{5, 5}}).has_value()) << "no time between first start and last end";
  EXPECT_DOUBLE_EQ(*busy_share({{0, 10}}), 1.0);
  EXPECT_DOUBLE_EQ(*busy_share({{0, 10}, {20, 30}}), 20.0 / 30.0);            // back to back with a gap
  EXPECT_DOUBLE_EQ(*busy_share({{20, 30}, {0, 10}}), 20.0 / 30.0);            // in any order
  EXPECT_DOUBLE_EQ(*busy_share({{0, 10}, {5, 15}, {40, 50}}), 25.0 / 50.0);   // two streams overlapping
  EXPECT_DOUBLE_EQ(*busy_share({{0, 100}, {10, 20}, {30, 40}}), 1.0);         // a long kernel under short ones
  EXPECT_DOUBLE_EQ(*busy_share({{0, 10}, {10, 20}}), 1.0);                    // touching: no gap
  EXPECT_DOUBLE_EQ(*busy_share({{0, 10}, {12, 11}, {20, 30}}), 20.0 / 30.0);  // a span that ends before it starts: empty
}

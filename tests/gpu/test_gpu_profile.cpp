// profile --step's GPU clock: CUDA events around a span measure the GPU's time in it, kernels
// and the idle time while the host held the GPU up; and its launch counts, eager and from a CUDA
// graph. Skipped without a GPU.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <chrono>
#include <thread>

#include "gputrain/profile/gpu_span_timer.hpp"
#include "profile/launch_counter.hpp"

using namespace gputrain::profile;

class GpuProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

TEST_F(GpuProfile, SpansCountTheGpusTimeNotTheHosts) {
  const c10::Device gpu(c10::kCUDA, 0);
  const auto a = at::randn({4096, 4096}, at::TensorOptions().device(gpu));
  (void)at::mm(a, a).sum().item<float>();  // kernels loaded, allocator warm

  // A host that is ahead: the spans hold the GPU's work between them, however briefly the host
  // stayed there. Ten 4096^3 matmuls take milliseconds on any GPU.
  GpuSpanTimer busy(gpu);
  busy.begin();
  for (int i = 0; i < 10; ++i) (void)at::mm(a, a);
  busy.end();
  GpuSpanTimer empty(gpu);
  for (int i = 0; i < 3; ++i) {
    empty.begin();
    empty.end();
  }
  EXPECT_EQ(busy.spans(), 1);
  EXPECT_EQ(empty.spans(), 3);
  EXPECT_GT(busy.seconds(), 1e-3);
  EXPECT_LT(empty.seconds(), 1e-3);

  // A host that holds an idle GPU up (a slow loader): the span holds the wait.
  torch::cuda::synchronize();
  GpuSpanTimer idle(gpu);
  idle.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  idle.end();
  EXPECT_GT(idle.seconds(), 0.040);
  EXPECT_LT(idle.seconds(), 1.0);
}

// Eight in-place adds launch eight kernels one by one; captured, each replay is one graph launch
// that runs the eight, and CUPTI reports those kernels too.
TEST_F(GpuProfile, LaunchesAreCountedOneByOneAndAsGraphReplays) {
  auto x = at::zeros({1024}, at::TensorOptions().device(at::kCUDA));
  x.add_(1);
  torch::cuda::synchronize();
  const auto eight_adds = [&x] {
    for (int i = 0; i < 8; ++i) x.add_(1);
  };
  {
    LaunchCounter counter;
    eight_adds();
    torch::cuda::synchronize();
    const auto counts = counter.stop();
    ASSERT_TRUE(counts.has_value()) << counter.why();
    EXPECT_GE(counts->kernel_launches, 8);
    EXPECT_GE(counts->gpu_kernels, 8);
    EXPECT_EQ(counts->graph_launches, 0);
  }
  at::cuda::CUDAGraph graph;
  {
    const c10::cuda::CUDAStreamGuard side(at::cuda::getStreamFromPool());
    graph.capture_begin();
    eight_adds();  // recorded, not run
    graph.capture_end();
  }
  torch::cuda::synchronize();
  {
    LaunchCounter counter;
    graph.replay();
    graph.replay();
    torch::cuda::synchronize();
    const auto counts = counter.stop();
    ASSERT_TRUE(counts.has_value()) << counter.why();
    EXPECT_EQ(counts->graph_launches, 2);
    EXPECT_GE(counts->gpu_kernels, 16);
    EXPECT_LT(counts->kernel_launches, 8);
  }
  EXPECT_EQ(x[0].item<float>(), 1 + 8 + 16);
}

// The busy share from CUPTI's kernel times: near 1 while queued products keep the GPU at work,
// near 0 when the host sleeps between two small kernels.
TEST_F(GpuProfile, BusyShareSeesTheGpuIdleBetweenKernels) {
  auto a = at::randn({4096, 4096}, at::TensorOptions().device(at::kCUDA));
  // Once before counting: the first product loads cuBLAS's and the kernels' code, milliseconds
  // of host work between two kernels (the H200 read 50 % busy with it inside the window).
  a = at::mm(a, a).mul_(1.0 / 64);
  a.add_(1);
  torch::cuda::synchronize();
  {
    LaunchCounter counter;
    for (int i = 0; i < 8; ++i) a = at::mm(a, a).mul_(1.0 / 64);  // ~ms each, queued back to back
    torch::cuda::synchronize();
    const auto counts = counter.stop();
    ASSERT_TRUE(counts.has_value() && counts->gpu_busy.has_value()) << counter.why();
    EXPECT_GT(*counts->gpu_busy, 0.9);
  }
  {
    LaunchCounter counter;
    a.add_(1);
    torch::cuda::synchronize();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.add_(1);
    torch::cuda::synchronize();
    const auto counts = counter.stop();
    ASSERT_TRUE(counts.has_value() && counts->gpu_busy.has_value()) << counter.why();
    EXPECT_LT(*counts->gpu_busy, 0.1);
  }
}

#include "gputrain/dist/bus_bandwidth.hpp"

#include "core/build_features.hpp"
#include "gputrain/core/error.hpp"

#if GPUTRAIN_HAVE_NCCL
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace gputrain::dist {

double all_reduce_bus_bandwidth(double algbw, int ranks) { return ranks <= 1 ? 0.0 : algbw * 2.0 * (ranks - 1) / ranks; }

#if GPUTRAIN_HAVE_NCCL
namespace {

// The ranks start their timed loops together.
class Rendezvous {
 public:
  explicit Rendezvous(int count) : count_(count) {}
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (++arrived_ == count_) {
      ready_.notify_all();
      return;
    }
    ready_.wait(lock, [&] { return arrived_ >= count_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  int count_, arrived_ = 0;
};

}  // namespace

AllReduceFigures measure_nccl_all_reduce(int gpus, std::int64_t bytes, int iterations) {
  if (gpus < 2) throw Error("an all-reduce bandwidth needs 2 or more GPUs, " + std::to_string(gpus) + " given", "");
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<double> seconds(static_cast<std::size_t>(gpus), 0.0);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(gpus));
  Rendezvous start(gpus);
  std::vector<std::thread> ranks;
  for (int r = 0; r < gpus; ++r) {
    ranks.emplace_back([&, r] {
      try {
        const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(r));
        c10::cuda::CUDAGuard guard(device);
        auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, r, gpus, c10d::ProcessGroupNCCL::Options::create());
        std::vector<at::Tensor> buffer{at::ones({bytes / 4}, at::TensorOptions().device(device).dtype(at::kFloat))};
        for (int i = 0; i < 2; ++i) group->allreduce(buffer)->wait();  // warm-up: communicator set-up, first launch
        at::cuda::getCurrentCUDAStream().synchronize();
        start.arrive();
        const auto begin = std::chrono::steady_clock::now();
        for (int i = 0; i < iterations; ++i) group->allreduce(buffer)->wait();
        at::cuda::getCurrentCUDAStream().synchronize();
        seconds[static_cast<std::size_t>(r)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() / iterations;
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        start.arrive();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  AllReduceFigures f;
  f.gpus = gpus;
  f.bytes = bytes / 4 * 4;
  f.seconds = *std::max_element(seconds.begin(), seconds.end());
  f.algbw_gbps = static_cast<double>(f.bytes) / f.seconds / 1e9;
  f.busbw_gbps = all_reduce_bus_bandwidth(f.algbw_gbps, gpus);
  return f;
}
#else
AllReduceFigures measure_nccl_all_reduce(int, std::int64_t, int) {
  throw Error("this build of gputrain has no NCCL", "rebuild against the torch wheel (its nvidia-nccl package holds nccl.h)");
}
#endif

}  // namespace gputrain::dist

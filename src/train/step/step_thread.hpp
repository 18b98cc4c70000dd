#pragma once
// Where a step's work (forward, backward, the optimizer's step) and validation run on the CPU
// once they can run out of memory (the batch-size probes, a run under device.max_memory, and any
// other run after its first out-of-memory error): a thread of their own, replaced after an attempt
// runs out. LibTorch's CPU path can keep memory on the thread where an operation ran out of it,
// until that thread ends: a batch-size probe of ResNet-50 that ran out under 512 MiB left 147 MB
// allocated on its thread (seen with oneDNN's convolutions on, not with them off; not traced
// further into oneDNN). On the training loop's own thread that memory would stay for the rest of
// the run, and each split or probe would find less room than the last. One thread until then, so
// its OpenMP team is made once; while it lives, the loop's thread runs its parallel work alone
// (the constructor says why).

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace gputrain::train {

class StepThread {
 public:
  StepThread();
  ~StepThread();
  StepThread(const StepThread&) = delete;
  StepThread& operator=(const StepThread&) = delete;

  /// work() on the thread, with this thread's autograd, autocast and profiler state; returns
  /// when it is done and throws what it threw.
  void run(const std::function<void()>& work);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void()>* task_ = nullptr;
  std::exception_ptr error_;
  bool stop_ = false;
  int loop_threads_;  // the loop thread's OpenMP threads, given back when this thread ends
  std::thread thread_;
};

}  // namespace gputrain::train

#pragma once
// Where a training step's forward and backward run on the CPU under a memory cap
// (device.max_memory): a thread of their own, replaced after an attempt runs out of memory.
// LibTorch's CPU path can keep memory on the thread where an operation ran out of it, until that
// thread ends (see disposable_thread.hpp); on the training loop's own thread that memory would
// stay for the rest of the run, and each split would find less room than the last. One thread
// for all steps otherwise, so its OpenMP team is made once.

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
  std::thread thread_;
};

}  // namespace gputrain::train

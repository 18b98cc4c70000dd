#include "step_thread.hpp"

#include <ATen/ThreadLocalState.h>

#include <utility>

namespace gputrain::train {

StepThread::StepThread() : thread_([this] { loop(); }) {}

StepThread::~StepThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StepThread::run(const std::function<void()>& work) {
  const at::ThreadLocalState state;
  const std::function<void()> task = [&] {
    at::ThreadLocalStateGuard same_state(state);
    work();
  };
  std::unique_lock lock(mutex_);
  task_ = &task;
  error_ = nullptr;
  wake_.notify_all();
  done_.wait(lock, [&] { return task_ == nullptr; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void StepThread::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || task_ != nullptr; });
    if (stop_) return;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*task_)();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    task_ = nullptr;
    done_.notify_all();
  }
}

}  // namespace gputrain::train

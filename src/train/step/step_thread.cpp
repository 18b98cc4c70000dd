#include "step_thread.hpp"

#include <ATen/ThreadLocalState.h>
#include <dlfcn.h>

#include <utility>

namespace gputrain::train {
namespace {

// OpenMP's calls on the runtime LibTorch loaded, looked up rather than linked (a second runtime
// must not load); absent, nothing is done. Each acts on the calling thread's settings and workers.
template <typename Function>
Function openmp(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

int openmp_max_threads() {
  static const auto get = openmp<int (*)()>("omp_get_max_threads");
  return get != nullptr ? get() : 0;
}

void set_openmp_threads(int threads) {
  static const auto set = openmp<void (*)(int)>("omp_set_num_threads");
  if (set != nullptr && threads > 0) set(threads);
}

// The calling thread's workers let go (OpenMP 5's omp_pause_resource_all, soft: the settings stay,
// the threads go) until it next runs a parallel region.
void let_go_of_openmp_workers() {
  static const auto pause = openmp<int (*)(int)>("omp_pause_resource_all");
  constexpr int kSoft = 1;  // omp_pause_soft
  if (pause != nullptr) pause(kSoft);
}

}  // namespace

// The runtime counts every thread of every team, idle ones too: the loop's team beside this
// thread's made more threads than cores, whose workers then wait by sleeping instead of spinning,
// and each of a step's parallel regions woke them (configs/mlp.yaml 2.3x slower on 2 cores). So
// while this thread steps, the loop's thread runs its own parallel work (a batch's gather) alone.
StepThread::StepThread() : loop_threads_(openmp_max_threads()), thread_([this] { loop(); }) {
  set_openmp_threads(1);
  let_go_of_openmp_workers();
}

StepThread::~StepThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  set_openmp_threads(loop_threads_);
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

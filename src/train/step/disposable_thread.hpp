#pragma once
// Runs work that may run out of memory on the CPU on a thread of its own. LibTorch's CPU path can
// keep memory on the thread where an operation ran out of it, until that thread ends: a batch-size
// probe of ResNet-50 that ran out under --max-memory 512MiB left 147 MB allocated on the main
// thread, which made the next probes and the exhaustive check fail (seen with oneDNN's
// convolutions on; not with them off; not traced further into oneDNN). A thread per attempt takes
// such memory with it. Only for work that fails by design (the probes): a thread costs a new
// OpenMP team.

#include <ATen/ThreadLocalState.h>

#include <exception>
#include <thread>
#include <utility>

namespace gputrain::train {

/// work() on a new thread that sees this one's autograd, autocast and profiler state; what it
/// throws is thrown here.
template <typename Work>
void run_on_disposable_thread(Work&& work) {
  const at::ThreadLocalState state;
  std::exception_ptr error;
  std::thread([&] {
    at::ThreadLocalStateGuard same_state(state);
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gputrain::train

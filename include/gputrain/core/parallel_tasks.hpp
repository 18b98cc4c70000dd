#pragma once
// Independent tasks on several threads. Why not at::parallel_for: it is inline OpenMP, so in a file
// built without -fopenmp (all of gputrain's: a process must load one OpenMP runtime, LibTorch's
// own) it runs every task on the calling thread.

#include <cstdint>
#include <functional>

namespace gputrain::core {

/// Runs task(0) ... task(count - 1) on up to `threads` threads, the calling one among them, each
/// thread taking the next index left; returns when all have run. The first exception a task threw
/// (by index) is rethrown then; the other tasks still run.
void parallel_tasks(std::int64_t count, int threads, const std::function<void(std::int64_t)>& task);

}  // namespace gputrain::core

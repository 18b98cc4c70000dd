#pragma once
// How long this process has run: what a command's "done in" should say. Timing from main() would
// leave out the dynamic loader's mapping of LibTorch's shared libraries (about 0.4 s of a 0.43 s
// `gputrain verify` on a machine without a GPU). And how long since a moment of its own.

#include <chrono>

namespace gputrain::core {

/// Wall seconds from `start` to now, on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Wall seconds since the kernel started this process (/proc/self/stat's start time, in clock
/// ticks: 10 ms steps); on a system without /proc, since the first call.
double seconds_since_process_start();

}  // namespace gputrain::core

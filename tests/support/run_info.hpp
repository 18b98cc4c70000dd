#pragma once
// The start of a small run as the metric sinks see it, for tests of what they write.

#include "gputrain/train/metrics.hpp"

namespace gputrain::test_support {

/// An mlp of 1,234 parameters on the CPU in fp32: 100 steps, 50 per epoch, 2 epochs, batch 32.
inline train::RunInfo small_run_info() {
  train::RunInfo i;
  i.run_dir = "runs/x";
  i.model = "mlp";
  i.device = "cpu";
  i.precision = "fp32";
  i.parameters = 1234;
  i.total_steps = 100;
  i.steps_per_epoch = 50;
  i.epochs = 2;
  i.batch_size = 32;
  return i;
}

}  // namespace gputrain::test_support

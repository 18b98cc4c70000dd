#pragma once
// The quick-train smoke test: six steps that prove an end-to-end training step works on this
// machine (device, CUDA settings, model transfer, autocast forward, scaled backward, a short loop
// whose loss must fall). Each step is a checks::Check, so verify's runner and report writers
// (text, JSON, JUnit) serve it too.

#include <string>
#include <vector>

#include "gputrain/checks/check.hpp"
#include "gputrain/train/config.hpp"

namespace gputrain::quick_train {

struct QuickTrainOptions {
  std::string device = "auto";                                ///< auto, cpu, cuda, cuda:N
  train::Precision precision = train::Precision::fp16_mixed;  ///< fp16 exercises the GradScaler
  std::int64_t batch_size = 32;
  std::int64_t iterations = 10;
};

/// The six steps, in order. They share state: a step whose predecessor failed is skipped.
/// A missing GPU fails the first step unless `context.allow_cpu` (then it warns and runs on CPU).
std::vector<checks::Check> quick_train_steps(const QuickTrainOptions& options);

}  // namespace gputrain::quick_train

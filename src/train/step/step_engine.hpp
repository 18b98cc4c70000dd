#pragma once
// The one way an optimizer step runs, shared by the training loop and the batch-size probes, so
// the probes measure exactly what training will run. The engine keeps what every step needs
// (the out-of-memory split, the gradient all-reduce, the errors' wording); a StepBackend runs the
// step's work: today's eager autograd step, and behind the same interface a captured CUDA graph.

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graph_plan.hpp"
#include "training_step.hpp"

namespace gputrain::memory {
class OomGuard;
}

namespace gputrain::train {

class StepThread;

/// A step's samples: over all ranks, and the most one rank holds (a plain run: both its own).
struct StepRows {
  std::int64_t global = 0, largest = 0;
};

/// How one optimizer step's work is done.
class StepBackend {
 public:
  virtual ~StepBackend() = default;
  /// Forward and backward over `batch`, `micro_batch` samples at a time (each prepared by the
  /// transform), each micro-batch's mean loss weighted by its share of `global_rows` (the step's
  /// samples over all ranks; 0: the batch's own), so the gradient equals one big batch's whatever
  /// the split. Returns the step's mean loss (a device scalar, not synced). `after_forward`, when
  /// set, runs after each micro-batch's forward and before its backward (the probes measure there).
  virtual at::Tensor accumulate(const StepParts& parts, const data::Batch& batch, std::int64_t micro_batch, std::int64_t global_rows,
                                const std::function<void()>& after_forward) = 0;
  /// The ranks' gradient sums (GradientSync::finish), unscale (fp16), clip, optimizer step
  /// (skipped on inf/nan), scaler update, gradients to none.
  virtual void apply(const StepParts& parts) = 0;
  /// Whether the last step did one-time set-up work besides the step (a CUDA graph's capture):
  /// the loop's throughput figures leave such steps out.
  virtual bool last_step_was_setup() const { return false; }
  /// Runs eager work between steps (validation) where it needs the least memory besides the
  /// steps' own: a graph backend lends it the captured step's memory. Nothing the work leaves on
  /// the device may be read after it returns.
  virtual void between_steps(const std::function<void()>& work) { work(); }
};

/// Autograd's backward and the fused optimizer, op by op: the step on every device.
std::unique_ptr<StepBackend> make_eager_backend();

/// The step captured in a CUDA graph per step shape and replayed (graph_step.cpp), eager where
/// CapturePlan says so. `required` (train.cuda_graphs: on) makes a capture that turns out
/// impossible an error; otherwise the run goes on eagerly and `say` gets one line on why.
/// The loss a replayed step returns is the graph's own buffer: read it before the next step.
/// `plan`: when to capture (the batch-size probes capture a shape's first step).
std::unique_ptr<StepBackend> make_graph_backend(bool required, std::function<void(const std::string&)> say, CapturePlan::Options plan = {});

class StepEngine {
 public:
  explicit StepEngine(StepParts parts, std::unique_ptr<StepBackend> backend = make_eager_backend());
  ~StepEngine();
  /// Steps from now on run on `backend`.
  void use(std::unique_ptr<StepBackend> backend) { backend_ = std::move(backend); }

  /// One training step over `batch` (this rank's share of `rows.global` samples; nullptr when the
  /// rank has none left this epoch), numbered `step` (0-based) in errors. `guard` may split the
  /// batch into smaller micro-batches after an out-of-memory error; the loss weighting keeps the
  /// gradient that of the whole (global) batch. Returns the step's mean loss on the device.
  at::Tensor step(const data::Batch* batch, StepRows rows, std::int64_t step, memory::OomGuard& guard);
  /// The step's two halves, for the probes that measure memory between them.
  at::Tensor accumulate(const data::Batch& batch, std::int64_t micro_batch, const std::function<void()>& after_forward = {});
  void apply();
  bool last_step_was_setup() const { return backend_->last_step_was_setup(); }
  void between_steps(const std::function<void()>& work) {
    on_step_thread([&] { backend_->between_steps(work); });
  }
  /// Creates the optimizer's state (momentum buffers, Adam's moments) without a forward pass, by
  /// stepping once on zero gradients: the probes then measure it as the run will hold it. It
  /// changes the parameters (weight decay), so use it only on a model that is thrown away.
  void create_optimizer_state();
  /// Runs a step's work: here, or on the CPU under a memory cap, or once an attempt has run out
  /// of memory (or expect_out_of_memory() said one will), on a StepThread (step_thread.hpp).
  /// step() (forward, backward and the optimizer's step) and between_steps() use it; the
  /// batch-size probes too.
  void on_step_thread(const std::function<void()>& work);
  /// After an out-of-memory error in on_step_thread(): the thread goes, with what the failed
  /// attempt left on it, and the next work gets a new one.
  void after_out_of_memory();
  /// Work that looks for the edge of memory (the batch-size probes) runs on a StepThread from the
  /// start. An uncapped training loop moves there after its first out-of-memory error only.
  void expect_out_of_memory() { own_thread_ = true; }

 private:
  StepParts parts_;
  std::unique_ptr<StepBackend> backend_;
  std::unique_ptr<StepThread> step_thread_;
  bool own_thread_ = false;  // on the CPU, steps run on step_thread_
};

}  // namespace gputrain::train

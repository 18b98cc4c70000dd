#include "step_engine.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/optimizer.h>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/gradient_sync.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/memory/oom_guard.hpp"
#include "optimizer_shards.hpp"
#include "step_thread.hpp"
#include "train/models/layers/sync_batch_norm.hpp"

namespace gputrain::train {

StepEngine::StepEngine(StepParts parts, std::unique_ptr<StepBackend> backend) : parts_(std::move(parts)), backend_(std::move(backend)) {}

StepEngine::~StepEngine() = default;

void StepEngine::on_step_thread(const std::function<void()>& work) {
  // Under a cap every step may run out of memory (the CPU tests of the OOM path, a plan for a
  // smaller machine): there from the start.
  if (!parts_.device.is_cpu() || (!own_thread_ && memory::cpu_memory_stats().cap == 0)) return work();
  if (!step_thread_) step_thread_ = std::make_unique<StepThread>();
  step_thread_->run(work);
}

void StepEngine::after_out_of_memory() {
  step_thread_.reset();
  own_thread_ = true;
}

at::Tensor StepEngine::step(const data::Batch* batch, StepRows rows, std::int64_t step, memory::OomGuard& guard) {
  at::Tensor step_loss;
  if (parts_.sync) parts_.sync->begin_step(step);
  if (!batch && parts_.norm_sync && rows.largest > 0) batch = parts_.no_rows;  // the others' forwards exchange statistics: join them
  if (batch)
    guard.run(
        step, batch->size(),
        [&](std::int64_t micro) {
          if (parts_.norm_sync) parts_.norm_sync->begin_step(step, (rows.largest + micro - 1) / micro);
          on_step_thread([&] { step_loss = backend_->accumulate(parts_, *batch, micro, rows.global, {}); });
        },
        [&] {
          if (parts_.norm_sync) parts_.norm_sync->discard();  // throws: the other ranks wait in an exchange
          parts_.optimizer.zero_grad(/*set_to_none=*/true);
          if (parts_.sync) parts_.sync->discard();
          after_out_of_memory();
        });
  try {
    on_step_thread([&] { backend_->apply(parts_); });  // where the step's parallel work runs, one OpenMP team
  } catch (const c10::OutOfMemoryError& e) {
    // Past the micro-batches nothing scales with the batch: parameters, gradients and optimizer
    // state alone do not fit, and the parameters may be half-updated, so no checkpoint is written.
    const auto figures = memory::memory_figures(parts_.device);
    const auto more = memory::more_memory_remedy(figures);
    throw Error(
        "out of memory in the optimizer step (step " + std::to_string(step + 1) +
            "): the parameters, gradients and optimizer state alone do not fit; " + memory::describe(figures) +
            ". The allocator said: " + e.what_without_backtrace(),
        "use optimizer.name: sgd (less state than adam/adamw), a smaller model" + (more.empty() ? "" : ", or " + more) +
            "; the last periodic checkpoint is intact" +
            std::string(parts_.sync && !parts_.shards ? "; distributed.shard_optimizer: true splits the optimizer state among the ranks"
                                                      : ""));
  }
  if (parts_.shards) parts_.shards->share_updates(step);
  return step_loss.defined() ? step_loss : at::zeros({}, at::TensorOptions().device(parts_.device));  // a rank with no samples
}

at::Tensor StepEngine::accumulate(const data::Batch& batch, std::int64_t micro_batch, const std::function<void()>& after_forward) {
  return backend_->accumulate(parts_, batch, micro_batch, 0, after_forward);
}

void StepEngine::apply() { backend_->apply(parts_); }

void StepEngine::create_optimizer_state() {
  {
    at::NoGradGuard no_grad;
    for (const auto& param : parts_.params) param.mutable_grad() = at::zeros_like(param);
  }
  parts_.optimizer.step();
  parts_.optimizer.zero_grad(/*set_to_none=*/true);
}

}  // namespace gputrain::train

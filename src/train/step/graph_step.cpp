// The CUDA-graph step backend: a whole optimizer step (the copy into static input buffers aside:
// augmentation, forward under autocast, loss, backward, the GradScaler's unscale, inf check and
// update, clipping, the fused optimizer) captured once per step shape and replayed after that, so
// the host launches one graph instead of hundreds of kernels. What it replays is the eager
// backend's own code, captured: the two cannot drift apart. Which step is eager, captured or
// replayed is CapturePlan's decision (graph_plan.hpp); this file is the CUDA side of it.
//
// Capture, as PyTorch's whole-network capture does it: eager warm-up steps first (cuDNN's
// benchmark, the optimizer state), then gradients set to none so backward allocates them inside
// the graph's private memory pool, capture on a side stream, and one replay for the step itself
// (capture runs nothing). The learning rate and the found-inf flag are device tensors the graph
// reads (DeviceStepped); the host writes the rate before each replay. Random ops (augmentation,
// dropout) draw from the CUDA generator, which advances its offset at each replay as eager steps do.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/record_function.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <list>
#include <optional>
#include <thread>
#include <utility>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/process_time.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/optimizer.hpp"
#include "grad_clip.hpp"
#include "graph_plan.hpp"
#include "step_engine.hpp"

namespace gputrain::train {
namespace {

// One captured step: the graph and the tensors it reads and writes at fixed addresses.
struct CapturedStep {
  GraphKey key;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  at::Tensor inputs, targets;         // the host copies each batch in before a replay
  at::Tensor loss;                    // the step's mean loss, rewritten by each replay
  at::Tensor grad_norm;               // the gradients' norm where every replay computes it (fp16, clipping)
  std::vector<at::Tensor> gradients;  // the applied gradients in the pool, per parameter: the norm and callbacks read them
  c10::MempoolId_t graph_pool{0, 0};
  bool recorded = false;  // capture_end succeeded: the graph owns its pool and frees it itself
};

// Eager work while a graph is alive (the last partial batch, validation) allocates from that
// graph's private pool, as Inductor's cudagraph trees run their warm-ups: the memory a replay uses
// as scratch serves it too, instead of as much again beside the pool, which a memory cap or
// batch_size: auto leaves no room for. The allocator gives a pool's free blocks to the stream they
// were made on, so the work runs on the capture stream, joined to the caller's by events both ways,
// and only this thread's allocations there go to the pool (not the loader's). The next replay
// overwrites the pool's free blocks: what the work leaves alive is copied out by the caller.
class InGraphPool {
 public:
  InGraphPool(c10::MempoolId_t pool, c10::cuda::CUDAStream side)
      : device_(side.device_index()), pool_(pool), caller_(at::cuda::getCurrentCUDAStream()), side_(side) {
    // While it routes, the allocator frees no cached block to make room: hand them back first.
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDAEvent ready;
    ready.record(caller_);
    ready.block(side_);
    on_side_.emplace(side_);
    const auto stream = side_.stream();
    const auto thread = std::this_thread::get_id();
    c10::cuda::CUDACachingAllocator::beginAllocateToPool(
        device_, pool_, [stream, thread](cudaStream_t s) { return s == stream && std::this_thread::get_id() == thread; });
  }
  ~InGraphPool() {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device_, pool_);
    c10::cuda::CUDACachingAllocator::releasePool(device_, pool_);  // beginAllocateToPool took a reference
    on_side_.reset();
    c10::cuda::CUDAEvent done;
    done.record(side_);
    done.block(caller_);
  }
  InGraphPool(const InGraphPool&) = delete;
  InGraphPool& operator=(const InGraphPool&) = delete;

 private:
  c10::DeviceIndex device_;
  c10::MempoolId_t pool_;
  c10::cuda::CUDAStream caller_, side_;
  std::optional<c10::cuda::CUDAStreamGuard> on_side_;
};

class GraphStep final : public StepBackend {
 public:
  GraphStep(std::unique_ptr<StepBackend> eager, bool required, std::function<void(const std::string&)> say, CapturePlan::Options plan)
      : eager_(std::move(eager)), required_(required), say_(std::move(say)), plan_(plan) {}

  at::Tensor accumulate(const StepParts& p, const data::Batch& batch, std::int64_t micro_batch, std::int64_t global_rows,
                        const std::function<void()>& after_forward) override {
    replayed_ = captured_now_ = in_pool_ = false;
    if (after_forward || !batch.inputs.is_cuda()) return eager_->accumulate(p, batch, micro_batch, global_rows, after_forward);
    const GraphKey key{batch.inputs.sizes().vec(), micro_batch, global_rows};
    const bool was_on = plan_.off_reason().empty();
    const auto action = plan_.next(key, batch.size());
    if (was_on && !plan_.off_reason().empty()) stop_capturing();
    try {
      switch (action) {
        case CapturePlan::Action::replay:
          return replay(p, batch, find(key));
        case CapturePlan::Action::capture:
          return capture(p, batch, key);
        case CapturePlan::Action::eager:
          break;
      }
      if (graphs_.empty()) return eager_->accumulate(p, batch, micro_batch, global_rows, after_forward);
      in_pool_ = true;  // the last partial batch, beside the graphs: in their memory
      at::Tensor loss;
      {
        InGraphPool in_pool(graphs_.back()->graph_pool, *side_);
        loss = eager_->accumulate(p, batch, micro_batch, global_rows, after_forward);
      }
      return loss.clone();
    } catch (const c10::OutOfMemoryError&) {
      release_graphs();
      throw;  // the OOM guard splits the batch and tries again, with the graphs' memory free
    }
  }

  void apply(const StepParts& p) override {
    // What accumulate() left for this step, taken once: a distributed step on a rank whose shard
    // ran out comes without a batch, calls apply() alone, and must still send its zeros and step.
    const bool replayed = replayed_, beside_graphs = in_pool_;
    replayed_ = in_pool_ = false;
    // A replayed graph has stepped already; its gradients live in the graph's pool, and the host
    // holds none (set to none inside the capture, as an eager step ends).
    if (replayed) return;
    if (!beside_graphs || graphs_.empty()) return eager_->apply(p);
    {
      InGraphPool in_pool(graphs_.back()->graph_pool, *side_);
      eager_->apply(p);
    }
    copy_out_of_pool(p);
  }

  bool last_step_was_setup() const override { return captured_now_; }

  void between_steps(const std::function<void()>& work) override {
    if (graphs_.empty()) return work();
    InGraphPool in_pool(graphs_.back()->graph_pool, *side_);
    work();
  }

 private:
  CapturedStep& find(const GraphKey& key) {
    for (auto& captured : graphs_)
      if (captured->key == key) return *captured;
    throw std::logic_error("CapturePlan asked to replay a graph that was not captured");
  }

  at::Tensor replay(const StepParts& p, const data::Batch& batch, CapturedStep& step) {
    step.inputs.copy_(batch.inputs, /*non_blocking=*/true);
    step.targets.copy_(batch.targets, /*non_blocking=*/true);
    if (auto* on_device = device_stepped(p.optimizer)) on_device->sync_lr();
    RECORD_USER_SCOPE("gputrain::graph_replay");
    step.graph->replay();
    replayed_ = true;
    read_out(p, step);
    return step.loss;
  }

  // What the loop reads after a replay: logging.grad_norm from the graph's own buffer or, on a
  // logged step, from the gradients the graph left in its pool (queued before the next replay
  // rewrites them); those gradients themselves where a callback asked for them (histograms).
  static void read_out(const StepParts& p, const CapturedStep& step) {
    if (!p.readout) return;
    if (step.grad_norm.defined())
      p.readout->value = step.grad_norm;
    else if (p.readout->wanted && !step.gradients.empty())
      p.readout->value = gradients_norm(step.gradients);
    if (p.readout->keep_gradients) p.readout->gradients = step.gradients;
  }

  at::Tensor capture(const StepParts& p, const data::Batch& batch, const GraphKey& key);
  // Returns the seconds of capture_end, where CUDA instantiates the graph.
  double record(const StepParts& p, CapturedStep& step, c10::cuda::CUDAStream stream);
  void abandon(const StepParts& p, CapturedStep& step, c10::MempoolId_t pool, c10::cuda::CUDAStream stream);
  at::Tensor eager_instead(const StepParts& p, const data::Batch& batch, const GraphKey& key, const std::string& reason);
  // A distributed capture that failed cannot fall back to an eager step: the all-reduces it
  // recorded went to the communicator, which pairs collectives by their order across ranks.
  [[noreturn]] static void refuse_distributed_capture(const GraphKey& key, const std::string& what) {
    throw Error("the CUDA graph of the distributed step at micro-batch " + std::to_string(key.micro_batch) + " could not be captured (" +
                    what +
                    "), and a distributed run cannot go on eagerly from there: the all-reduces "
                    "the capture recorded would pair wrongly with the other ranks'",
                "set train.cuda_graphs: off and start the run again: it resumes from its last checkpoint (checkpoint.resume: auto)");
  }
  // An out-of-memory error: the graphs' private pools (their gradients and activations) go back
  // to the allocator before the smaller micro-batch is tried.
  void release_graphs() {
    if (graphs_.empty()) return;
    c10::cuda::device_synchronize();  // no replay may still run when its graph goes
    graphs_.clear();
    plan_.released_all();
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
  // What an eager step in the graphs' pool leaves for the loop to read (the gradients' norm, the
  // gradients a callback keeps), copied out before a replay can overwrite it.
  static void copy_out_of_pool(const StepParts& p) {
    if (!p.readout) return;
    if (p.readout->value.defined()) p.readout->value = p.readout->value.clone();
    for (auto& gradient : p.readout->gradients)
      if (gradient.defined()) gradient = gradient.clone();
  }
  void stop_capturing() {
    if (required_) refuse_cuda_graphs(plan_.off_reason());
    graphs_.clear();
    say_("cuda graphs: off from here on (" + plan_.off_reason() + "); the steps run eagerly");
  }

  std::unique_ptr<StepBackend> eager_;
  bool required_;
  std::function<void(const std::string&)> say_;
  CapturePlan plan_;
  std::list<std::unique_ptr<CapturedStep>> graphs_;
  std::optional<c10::cuda::CUDAStream> side_;
  bool replayed_ = false;      // this step's work was a replay: nothing left for apply()
  bool in_pool_ = false;       // this step ran eagerly in the graphs' memory (InGraphPool)
  bool captured_now_ = false;  // this step captured its graph
};

// The step's work, recorded into step.graph on `stream` (nothing runs).
double GraphStep::record(const StepParts& p, CapturedStep& step, c10::cuda::CUDAStream stream) {
  c10::cuda::CUDAStreamGuard on_side(stream);
  // Autocast's cache of cast weights would hold casts made inside the capture past its end.
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  struct RestoreCache {
    bool enabled;
    ~RestoreCache() { at::autocast::set_autocast_cache_enabled(enabled); }
  } restore{cache};
  // Thread-local mode: the data loader's threads may use CUDA while the main thread captures.
  step.graph->capture_begin(step.graph_pool, cudaStreamCaptureModeThreadLocal);
  step.loss = eager_->accumulate(p, data::Batch{step.inputs, step.targets}, step.key.micro_batch, step.key.global_rows, {});
  // A graph cannot measure on some replays only. Where the step computes the norm anyway
  // (clipping) or its gradients stay scaled in memory (fp16), every replay measures it into a
  // buffer; otherwise the graph holds its applied gradients and a logged step measures them after
  // its replay (read_out), so the other steps skip one more read of every gradient (14 % of
  // configs/mlp.yaml's step on the H200). Gradients are not copied inside it.
  const bool measured = p.readout && p.readout->wanted, keep = p.readout && p.readout->keep_gradients;
  const bool norm_inside = p.readout && p.readout->norms && (p.train.clip_grad_norm > 0 || p.scaler.enabled());
  if (p.readout) {
    p.readout->wanted = norm_inside;
    p.readout->keep_gradients = false;
    p.readout->hold_gradients = true;
  }
  eager_->apply(p);
  if (p.readout) {
    if (norm_inside) step.grad_norm = p.readout->value;
    step.gradients = std::exchange(p.readout->held, {});
    p.readout->hold_gradients = false;
    p.readout->wanted = measured;
    p.readout->keep_gradients = keep;
  }
  const auto ending = std::chrono::steady_clock::now();
  step.graph->capture_end();
  step.recorded = true;
  return core::seconds_since(ending);
}

at::Tensor GraphStep::capture(const StepParts& p, const data::Batch& batch, const GraphKey& key) {
  const auto started = std::chrono::steady_clock::now();
  CaptureTiming timing;
  auto step = std::make_unique<CapturedStep>();
  step->key = key;
  step->graph = std::make_unique<at::cuda::CUDAGraph>();
  step->inputs = at::empty_like(batch.inputs).copy_(batch.inputs);
  step->targets = at::empty_like(batch.targets).copy_(batch.targets);
  auto* on_device = device_stepped(p.optimizer);
  // The warm-up steps tell already: no capture begun (and, distributed, no all-reduce recorded) in vain.
  if (on_device && !on_device->last_step_fused())
    return eager_instead(p, batch, key, "the optimizer's step is not fused: " + on_device->why_not_fused());
  if (on_device) on_device->sync_lr();  // before capture: a rate written inside would replay as a constant
  p.optimizer.zero_grad(/*set_to_none=*/true);
  const auto caller = at::cuda::getCurrentCUDAStream();
  if (!side_) side_ = at::cuda::getStreamFromPool();
  // As torch.cuda.graph: settle the queue and hand cached blocks back, so the pool can grow.
  c10::cuda::device_synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  timing.settling = core::seconds_since(started);
  const auto pool = at::cuda::graph_pool_handle();
  step->graph_pool = pool;
  c10::cuda::CUDAEvent ready;
  ready.record(caller);
  ready.block(*side_);
  try {
    const auto recording_from = std::chrono::steady_clock::now();
    timing.instantiating = record(p, *step, *side_);
    timing.recording = core::seconds_since(recording_from) - timing.instantiating;
  } catch (const c10::OutOfMemoryError& e) {
    abandon(p, *step, pool, *side_);
    if (p.sync) refuse_distributed_capture(key, "out of memory: " + core::first_line(e.what_without_backtrace()));
    throw;  // the OOM guard splits the batch; the smaller micro-batch warms up and is captured in turn
  } catch (const std::exception& e) {
    abandon(p, *step, pool, *side_);
    if (p.sync) refuse_distributed_capture(key, core::first_line(e.what()));
    return eager_instead(p, batch, key, "capture failed: " + core::first_line(e.what()));
  }
  if (on_device && !on_device->last_step_fused()) {
    abandon(p, *step, pool, *side_);
    return eager_instead(p, batch, key, "the optimizer's step is not fused: " + on_device->why_not_fused());
  }
  c10::cuda::CUDAEvent done;
  done.record(*side_);
  done.block(caller);
  if (const auto evicted = plan_.captured(key)) graphs_.remove_if([&](const auto& g) { return g->key == *evicted; });
  graphs_.push_back(std::move(step));
  auto& captured = *graphs_.back();
  const auto replay_from = std::chrono::steady_clock::now();
  captured.graph->replay();         // the capture ran nothing: this is the step's work
  c10::cuda::device_synchronize();  // once, so that the line below can say what the first replay took
  timing.first_replay = core::seconds_since(replay_from);
  timing.total = core::seconds_since(started);
  read_out(p, captured);
  replayed_ = captured_now_ = true;
  say_("cuda graphs: the step at micro-batch " + std::to_string(key.micro_batch) + " is captured (" + capture_timing_text(timing) +
       ") and replayed from here on");
  return captured.loss;
}

// Leaves a failed capture: ends it on the stream, frees what it allocated, and forgets the host
// state the half-recorded step changed.
void GraphStep::abandon(const StepParts& p, CapturedStep& step, c10::MempoolId_t pool, c10::cuda::CUDAStream stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(stream.stream(), &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
  }
  (void)cudaGetLastError();  // the capture's error is reported by the caller, not left for the next launch
  if (p.readout) {           // eager steps hold no gradients past their step
    p.readout->hold_gradients = false;
    p.readout->held.clear();
  }
  p.optimizer.zero_grad(/*set_to_none=*/true);
  p.scaler.forget_step();
  step.loss = at::Tensor();
  step.graph.reset();
  if (step.recorded) return;
  const auto device = c10::cuda::current_device();
  c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
  c10::cuda::CUDACachingAllocator::releasePool(device, pool);
  auto* pinned = at::getHostAllocator(at::kCUDA);
  pinned->end_allocate_to_pool(pool);
  pinned->release_pool(pool);
}

at::Tensor GraphStep::eager_instead(const StepParts& p, const data::Batch& batch, const GraphKey& key, const std::string& reason) {
  plan_.give_up(reason);
  stop_capturing();
  return eager_->accumulate(p, batch, key.micro_batch, key.global_rows, {});
}

}  // namespace

std::unique_ptr<StepBackend> make_graph_backend(bool required, std::function<void(const std::string&)> say, CapturePlan::Options plan) {
  return std::make_unique<GraphStep>(make_eager_backend(), required, std::move(say), plan);
}

}  // namespace gputrain::train

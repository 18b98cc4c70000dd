#include "gputrain/dist/gradient_sync.hpp"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `ready` after the parameter's AccumulateGrad node wrote its .grad(). A hook on the tensor,
// not on the node: holding the node would pin it to the stream it was made on, and autograd then
// makes that stream wait on the one backward runs on, which a CUDA graph's capture refuses.
class GradientReadyHook final : public torch::autograd::PostAccumulateGradHook {
 public:
  explicit GradientReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  void operator()(const torch::autograd::Variable& /*parameter*/) override { ready_(); }

 private:
  std::function<void()> ready_;
};

}  // namespace

struct GradientSync::Impl {
  struct Bucket {
    std::vector<std::size_t> members;  // indices into params
    at::Tensor flat;                   // the wire buffer
    std::size_t pending = 0;           // members whose gradient is not in `flat` yet
    bool launched = false;
    std::shared_ptr<Work> work;
  };

  Communicator& comm;
  GradientSyncOptions options;
  std::vector<at::Tensor> params;       // the ones with requires_grad, registration order
  std::vector<std::size_t> bucket_of;   // per param
  std::vector<std::int64_t> offset_of;  // per param, elements into its bucket's flat buffer
  std::vector<Bucket> buckets;
  std::vector<const torch::autograd::PostAccumulateGradHook*> hooks;  // per param, ours to remove
  std::unordered_map<const c10::TensorImpl*, std::size_t> index_of;   // a parameter's place in params

  std::mutex mutex;
  bool armed = false;
  std::size_t next_launch = 0;
  std::vector<char> ready;  // per param, this step
  std::int64_t step = 0;
  SyncFigures figures;

  Impl(Communicator& c, GradientSyncOptions o) : comm(c), options(o) {}

  // The parameter's place in its bucket, laid out as the parameter is (a channels_last weight's
  // elements in channels_last order): its gradient copies in as one run of memory, and the sum
  // becomes its .grad() with the parameter's strides, as the fused optimizer takes it.
  at::Tensor view_of(std::size_t param) {
    const auto& p = params[param];
    const auto slot = buckets[bucket_of[param]].flat.narrow(0, offset_of[param], p.numel());
    return p.is_non_overlapping_and_dense() ? slot.as_strided(p.sizes(), p.strides()) : slot.view(p.sizes());
  }

  // The parameter's gradient is in its .grad() (or it has none this step): its bucket fills.
  void mark_ready(std::size_t param) {
    ready[param] = 1;
    auto& b = buckets[bucket_of[param]];
    if (--b.pending == 0) stage(b);
  }

  // Copies a full bucket's gradients in with one multi-tensor copy (zeros for a parameter without
  // one): a kernel or a few for the bucket, not one per parameter inside a captured step.
  void stage(Bucket& b) {
    std::vector<at::Tensor> to, from;
    for (const auto k : b.members) {
      const auto& grad = params[k].grad();
      auto target = view_of(k);
      if (!grad.defined()) {
        target.zero_();
      } else if (grad.data_ptr() != target.data_ptr()) {  // last step's sum, still the gradient, is in place
        to.push_back(target);
        from.push_back(grad);
      }
    }
    if (!to.empty()) at::_foreach_copy_(to, from);
  }

  // Starts every full bucket whose predecessors have started: the same order on every rank.
  void launch_in_order(bool in_backward) {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      auto& b = buckets[next_launch];
      RECORD_USER_SCOPE(("gputrain::allreduce_bucket_" + std::to_string(next_launch + 1)).c_str());
      b.work = comm.all_reduce_sum(b.flat, "the all-reduce of gradient bucket " + std::to_string(next_launch + 1) + " of " +
                                               std::to_string(buckets.size()) + " in step " + std::to_string(step + 1));
      b.launched = true;
      if (in_backward) ++figures.launched_in_backward;
      ++next_launch;
    }
  }

  void on_gradient_ready(std::size_t param) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!armed || ready[param]) return;
    mark_ready(param);
    launch_in_order(/*in_backward=*/true);
  }

  void reset() {
    armed = false;
    next_launch = 0;
    std::fill(ready.begin(), ready.end(), 0);
    for (auto& b : buckets) {
      b.pending = b.members.size();
      b.launched = false;
      b.work.reset();
    }
  }
};

GradientSync::GradientSync(const std::vector<at::Tensor>& parameters, Communicator& communicator, GradientSyncOptions options)
    : impl_(std::make_unique<Impl>(communicator, options)) {
  auto& m = *impl_;
  for (const auto& p : parameters)
    if (p.requires_grad()) m.params.push_back(p);
  m.bucket_of.resize(m.params.size());
  m.offset_of.resize(m.params.size());
  m.ready.assign(m.params.size(), 0);
  // Reverse registration order, a bucket closing once it reaches its cap (or the dtype or device
  // changes), as PyTorch DDP's compute_bucket_assignment_by_size does.
  std::int64_t filled = 0;
  std::vector<std::int64_t> elements;  // per bucket
  for (std::size_t k = m.params.size(); k-- > 0;) {
    const auto& p = m.params[k];
    const auto wire = options.wire_dtype.value_or(p.scalar_type());
    const std::int64_t cap = m.buckets.size() <= 1 ? options.first_bucket_bytes : options.bucket_bytes;
    const auto& last = m.params[m.buckets.empty() ? k : m.buckets.back().members.front()];
    const bool fits =
        !m.buckets.empty() && filled < cap && options.wire_dtype.value_or(last.scalar_type()) == wire && last.device() == p.device();
    if (!fits) {
      m.buckets.emplace_back();
      elements.push_back(0);
      filled = 0;
    }
    m.bucket_of[k] = m.buckets.size() - 1;
    m.offset_of[k] = elements.back();
    m.buckets.back().members.push_back(k);
    elements.back() += p.numel();
    filled += p.numel() * static_cast<std::int64_t>(c10::elementSize(wire));
  }
  for (std::size_t b = 0; b < m.buckets.size(); ++b) {
    const auto& first = m.params[m.buckets[b].members.front()];
    m.buckets[b].flat = at::zeros({elements[b]}, first.options().dtype(options.wire_dtype.value_or(first.scalar_type())));
    m.figures.bytes_per_step += m.buckets[b].flat.numel() * static_cast<std::int64_t>(m.buckets[b].flat.element_size());
  }
  m.figures.buckets = static_cast<std::int64_t>(m.buckets.size());
  m.reset();
  for (std::size_t k = 0; k < m.params.size(); ++k) {
    m.index_of[m.params[k].unsafeGetTensorImpl()] = k;
    TORCH_CHECK(m.params[k].is_leaf(), "GradientSync: parameter ", k, " is not a leaf that requires grad");
    Impl* impl = impl_.get();
    auto hook = std::make_unique<GradientReadyHook>([impl, k] { impl->on_gradient_ready(k); });
    m.hooks.push_back(hook.get());
    torch::autograd::impl::set_post_acc_grad_hooks(m.params[k], std::move(hook));
  }
}

GradientSync::~GradientSync() {
  for (std::size_t k = 0; k < impl_->hooks.size(); ++k) {
    auto& hook = torch::autograd::impl::post_acc_grad_hooks(impl_->params[k]);
    if (hook.get() == impl_->hooks[k]) hook.reset();  // a later owner's hook stays
  }
}

void GradientSync::begin_step(std::int64_t step) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->reset();
  impl_->step = step;
}

void GradientSync::gradient_ready(const at::Tensor& parameter) {
  const auto found = impl_->index_of.find(parameter.unsafeGetTensorImpl());
  if (found != impl_->index_of.end()) impl_->on_gradient_ready(found->second);
}

void GradientSync::arm() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->armed = true;
}

void GradientSync::finish() {
  auto& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.armed = false;
    for (std::size_t k = 0; k < m.params.size(); ++k)
      if (!m.ready[k]) m.mark_ready(k);
    m.launch_in_order(/*in_backward=*/false);
  }
  const auto start = Clock::now();
  for (auto& b : m.buckets) b.work->wait();
  m.figures.wait_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& b : m.buckets) {
    const auto seconds = b.work->seconds();
    m.figures.communication_seconds =
        seconds ? std::optional<double>(m.figures.communication_seconds.value_or(0) + *seconds) : std::nullopt;
  }
  at::NoGradGuard no_grad;
  for (std::size_t k = 0; k < m.params.size(); ++k) {
    auto& p = m.params[k];
    const auto sum = m.view_of(k);
    if (sum.scalar_type() == p.scalar_type() && sum.strides() == p.strides()) {
      // The optimizer reads the sum where the all-reduce left it (PyTorch DDP's gradient_as_bucket_view,
      // for the copy out): same dtype and layout as the parameter, so the fused optimizer takes it too.
      // detach(): the same memory, but not an autograd view, which zero_grad()'s detach_() refuses.
      p.mutable_grad() = sum.detach();
    } else if (p.grad().defined()) {
      p.mutable_grad().copy_(sum);
    } else {
      p.mutable_grad() = sum.to(p.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    }
  }
  ++m.figures.steps;
  m.reset();
}

void GradientSync::discard() {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.next_launch > 0)
    throw Error("out of memory in the backward of step " + std::to_string(m.step + 1) + " after " +
                    core::counted(m.next_launch, "gradient bucket") +
                    " had been sent to the other ranks: the step cannot run again without pairing them wrongly",
                "lower train.batch_size on every rank (raise train.grad_accum to keep the effective batch); then resume from the "
                "last checkpoint");
  m.reset();
}

std::vector<std::int64_t> GradientSync::bucket_parameter_counts() const {
  std::vector<std::int64_t> counts;
  for (const auto& b : impl_->buckets) counts.push_back(static_cast<std::int64_t>(b.members.size()));
  return counts;
}

std::int64_t GradientSync::bucket_of(const at::Tensor& parameter) const {
  const auto found = impl_->index_of.find(parameter.unsafeGetTensorImpl());
  return found == impl_->index_of.end() ? -1 : static_cast<std::int64_t>(impl_->bucket_of[found->second]);
}

SyncFigures GradientSync::figures() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->figures;
}

std::optional<double> SyncFigures::hidden_share() const {
  if (!communication_seconds || *communication_seconds <= 0) return std::nullopt;
  return std::clamp(1.0 - wait_seconds / *communication_seconds, 0.0, 1.0);
}

void broadcast_from_rank0(Communicator& communicator, const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& buffers) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> all;
  for (const auto& t : parameters) all.push_back(t.detach());
  for (const auto& t : buffers) all.push_back(t.detach());
  communicator.broadcast(all, 0, "the broadcast of rank 0's parameters and buffers");
}

}  // namespace gputrain::dist

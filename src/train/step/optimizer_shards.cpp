#include "optimizer_shards.hpp"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <unordered_set>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/train/optimizer.hpp"
#include "optimizer_kind.hpp"

namespace gputrain::train {
namespace {

namespace optim = torch::optim;

std::vector<at::Tensor> all_parameters(optim::Optimizer& optimizer) {
  std::vector<at::Tensor> params;
  for (auto& group : optimizer.param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  return params;
}

std::vector<std::int64_t> numels_of(const std::vector<at::Tensor>& params) {
  std::vector<std::int64_t> numels;
  for (const auto& p : params) numels.push_back(p.numel());
  return numels;
}

// The state of one parameter as the optimizer keeps it: which tensors, and how to make an empty
// one to receive into. SGD: the momentum buffer; Adam and AdamW: both moments and the step count.
using Kind = OptimizerKind;

Kind kind_of(optim::Optimizer& optimizer) {
  const auto kind = optimizer_kind(optimizer);
  if (kind == Kind::other)
    throw Error("distributed.shard_optimizer shards SGD, Adam and AdamW only", "set distributed.shard_optimizer: false");
  return kind;
}

template <typename State>
std::vector<at::Tensor> adam_tensors(const optim::OptimizerParamState& s) {
  const auto& state = static_cast<const State&>(s);
  return {state.exp_avg(), state.exp_avg_sq()};
}

std::vector<at::Tensor> state_tensors(Kind kind, const optim::OptimizerParamState& s) {
  if (kind == Kind::adam) return adam_tensors<optim::AdamParamState>(s);
  if (kind == Kind::adamw) return adam_tensors<optim::AdamWParamState>(s);
  const auto& buffer = static_cast<const optim::SGDParamState&>(s).momentum_buffer();
  return buffer.defined() ? std::vector<at::Tensor>{buffer} : std::vector<at::Tensor>{};
}

std::size_t tensors_per_state(Kind kind) { return kind == Kind::sgd ? 1 : 2; }

template <typename State>
std::unique_ptr<optim::OptimizerParamState> adam_state(std::vector<at::Tensor>& t, std::int64_t step) {
  auto state = std::make_unique<State>();
  state->exp_avg(t[0]);
  state->exp_avg_sq(t[1]);
  state->step(step);
  return state;
}

std::unique_ptr<optim::OptimizerParamState> make_state(Kind kind, std::vector<at::Tensor> t, std::int64_t step) {
  if (kind == Kind::adam) return adam_state<optim::AdamParamState>(t, step);
  if (kind == Kind::adamw) return adam_state<optim::AdamWParamState>(t, step);
  auto state = std::make_unique<optim::SGDParamState>();
  state->momentum_buffer(t[0]);
  return state;
}

std::int64_t step_of(Kind kind, const optim::OptimizerParamState& s) {
  if (kind == Kind::adam) return static_cast<const optim::AdamParamState&>(s).step();
  if (kind == Kind::adamw) return static_cast<const optim::AdamWParamState&>(s).step();
  return 0;
}

constexpr std::int64_t kNoState = -1;

}  // namespace

std::vector<int> shard_owners(const std::vector<std::int64_t>& numels, int world) {
  std::vector<std::size_t> order(numels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return numels[a] > numels[b]; });
  std::vector<std::int64_t> load(static_cast<std::size_t>(std::max(world, 1)), 0);
  std::vector<int> owners(numels.size(), 0);
  for (const auto k : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    owners[k] = static_cast<int>(least);
    load[static_cast<std::size_t>(least)] += numels[k];
  }
  return owners;
}

std::vector<at::Tensor> own_parameters(optim::Optimizer& optimizer, int rank, int world) {
  const auto params = all_parameters(optimizer);
  const auto owners = shard_owners(numels_of(params), world);
  std::vector<at::Tensor> own;
  for (std::size_t k = 0; k < params.size(); ++k)
    if (owners[k] == rank) own.push_back(params[k]);
  return own;
}

std::int64_t optimizer_state_bytes(optim::Optimizer& optimizer) {
  const auto kind = optimizer_kind(optimizer);
  std::int64_t bytes = 0;
  if (kind == Kind::other) return bytes;
  for (const auto& entry : optimizer.state())
    for (const auto& t : state_tensors(kind, *entry.second)) bytes += static_cast<std::int64_t>(t.nbytes());
  return bytes;
}

OptimizerShards::OptimizerShards(optim::Optimizer& optimizer, dist::Communicator& communicator, std::int64_t message_bytes)
    : optimizer_(optimizer), comm_(communicator), params_(all_parameters(optimizer)) {
  kind_of(optimizer);  // refuses what it cannot shard
  auto* stepped = device_stepped(optimizer);
  if (!stepped) throw Error("distributed.shard_optimizer needs one of gputrain's optimizers", "set distributed.shard_optimizer: false");
  owners_ = shard_owners(numels_of(params_), comm_.size());
  for (std::size_t k = 0; k < params_.size(); ++k)
    if (owners_[k] == comm_.rank()) own_.push_back(params_[k]);
  stepped->step_only(own_);
  keep_own_state();
  plan_messages(params_, owners_, message_bytes);
}

namespace {

std::int64_t elements_of(const std::vector<at::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

}  // namespace

std::int64_t OptimizerShards::own_elements() const { return elements_of(own_); }

std::int64_t OptimizerShards::elements() const { return elements_of(params_); }

// Per owner, in the optimizer's order: parameters of one dtype and device packed up to
// `message_bytes`; one at least that large alone, in place.
void OptimizerShards::plan_messages(const std::vector<at::Tensor>& params, const std::vector<int>& owners, std::int64_t message_bytes) {
  for (int root = 0; root < comm_.size(); ++root) {
    Message packing;
    const auto flush = [&] {
      if (!packing.members.empty()) messages_.push_back(std::move(packing));
      packing = Message{};
    };
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (owners[k] != root) continue;
      const auto& p = params[k];
      const auto bytes = static_cast<std::int64_t>(p.nbytes());
      if (bytes >= message_bytes) {
        messages_.push_back(Message{root, {p}, p.numel(), false});
        continue;
      }
      const bool fits = !packing.members.empty() && packing.members.front().scalar_type() == p.scalar_type() &&
                        packing.members.front().device() == p.device() &&
                        (packing.elements + p.numel()) * static_cast<std::int64_t>(p.element_size()) <= message_bytes;
      if (!fits) flush();
      packing.root = root;
      packing.packed = true;
      packing.members.push_back(p);
      packing.elements += p.numel();
    }
    flush();
  }
  for (const auto& m : messages_) {
    if (!m.packed) continue;
    auto& buffer = staging_[m.members.front().scalar_type()];
    if (!buffer.defined() || buffer.numel() < m.elements) buffer = at::empty({m.elements}, m.members.front().options());
  }
}

void OptimizerShards::send(const Message& m, const std::string& what) {
  at::NoGradGuard no_grad;
  const bool root = m.root == comm_.rank();
  if (!m.packed) {
    const auto& p = m.members.front();
    auto wire = p.is_contiguous() ? p.detach() : p.detach().contiguous();
    comm_.start_broadcast(wire, m.root, what)->wait();
    if (!root && wire.data_ptr() != p.data_ptr()) p.detach().copy_(wire);  // received into a contiguous copy
    return;
  }
  auto wire = staging_.at(m.members.front().scalar_type()).narrow(0, 0, m.elements);
  std::int64_t offset = 0;
  if (root)
    for (const auto& p : m.members) {
      wire.narrow(0, offset, p.numel()).view(p.sizes()).copy_(p.detach());
      offset += p.numel();
    }
  // On a GPU wait() orders this stream after the broadcast: the unpacking below, and the next
  // message's packing into the same buffer, come after it without the host waiting.
  comm_.start_broadcast(wire, m.root, what)->wait();
  if (root) return;
  for (const auto& p : m.members) {
    p.detach().copy_(wire.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

void OptimizerShards::share_updates(std::int64_t step) {
  RECORD_USER_SCOPE("gputrain::share_parameters");
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < messages_.size(); ++i)
    send(messages_[i], "the broadcast of the parameters rank " + std::to_string(messages_[i].root) + " updated in step " +
                           std::to_string(step + 1) + " (message " + std::to_string(i + 1) + " of " + std::to_string(messages_.size()) +
                           ")");
  share_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void OptimizerShards::gather_state() {
  const Kind kind = kind_of(optimizer_);
  if (auto* stepped = device_stepped(optimizer_)) stepped->flush_host_state();  // Adam's step counts, into the state objects
  // Which parameters have state on their owner (a parameter that never had a gradient has none),
  // and Adam's step counts: one small all-gather.
  std::vector<std::int64_t> mine(params_.size(), kNoState);
  auto& states = optimizer_.state();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const auto found = states.find(params_[k].unsafeGetTensorImpl());
    if (owners_[k] == comm_.rank() && found != states.end() && !state_tensors(kind, *found->second).empty())
      mine[k] = step_of(kind, *found->second);
  }
  const auto all = comm_.all_gather(mine, "the gathering of the optimizer state's layout for a checkpoint");
  at::NoGradGuard no_grad;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const int owner = owners_[k];
    const std::int64_t step = all[static_cast<std::size_t>(owner) * params_.size() + k];
    if (step == kNoState) continue;
    const auto& p = params_[k];
    std::vector<at::Tensor> tensors;
    if (owner == comm_.rank())
      tensors = state_tensors(kind, *states.at(p.unsafeGetTensorImpl()));
    else
      for (std::size_t t = 0; t < tensors_per_state(kind); ++t) tensors.push_back(at::empty(p.sizes(), p.options()));
    for (auto& t : tensors)
      if (!t.is_contiguous()) t = t.contiguous();  // a sender's copy, or a receiver's buffer laid out as the wire
    comm_.broadcast(tensors, owner, "the gathering of parameter " + std::to_string(k) + "'s optimizer state for a checkpoint");
    if (owner == comm_.rank() || comm_.rank() != 0) continue;  // only the writer keeps the others' state
    for (auto& t : tensors) t = t.to(at::kCPU);
    states[p.unsafeGetTensorImpl()] = make_state(kind, std::move(tensors), step);
  }
}

void OptimizerShards::keep_own_state() {
  std::unordered_set<const void*> own;
  for (const auto& p : own_) own.insert(p.unsafeGetTensorImpl());
  auto& states = optimizer_.state();
  for (auto it = states.begin(); it != states.end();) it = own.count(it->first) ? std::next(it) : states.erase(it);
}

}  // namespace gputrain::train

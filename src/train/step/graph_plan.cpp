#include "graph_plan.hpp"

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {

GraphDecision decide_cuda_graphs(const GraphConditions& c) {
  std::string reason;
  if (c.setting == "off")
    return {false, "train.cuda_graphs: off"};
  else if (!c.cuda)
    reason = "the device is not a CUDA GPU";
  else if (!c.gradient_sync.empty() && c.gradient_sync != "nccl")
    reason = "gradients are all-reduced over " + c.gradient_sync + ", whose collectives the host runs";
  else if (c.sharded_optimizer)
    reason = "distributed.shard_optimizer's steps are not captured yet (that needs a test on two GPUs first)";
  else if (!c.eager_callback.empty())
    reason = "callback '" + c.eager_callback + "' needs eager steps";
  else if (!c.device_stepped)
    reason = "the optimizer reads the host each step";
  else if (c.recomputes_random)
    reason =
        "train.activation_checkpointing recomputes blocks that draw random numbers (dropout), whose generators a "
        "capture cannot rewind yet";
  if (reason.empty()) return {true, ""};
  if (c.setting == "on") refuse_cuda_graphs(reason);
  return {false, reason};
}

void refuse_cuda_graphs(const std::string& reason) {
  throw UsageError("train.cuda_graphs is on, but this run's steps cannot be captured: " + reason,
                   "set train.cuda_graphs: auto (steps that cannot be captured run eagerly, and the run says why) or off");
}

CapturePlan::Seen& CapturePlan::seen(const GraphKey& key) {
  for (auto it = keys_.begin(); it != keys_.end(); ++it)
    if (it->key == key) {
      keys_.splice(keys_.begin(), keys_, it);
      return keys_.front();
    }
  keys_.push_front(Seen{key});
  return keys_.front();
}

CapturePlan::Action CapturePlan::next(const GraphKey& key, std::int64_t rows) {
  if (!off_reason_.empty()) return Action::eager;
  if (rows > largest_rows_) largest_rows_ = rows;
  if (rows < largest_rows_) return Action::eager;  // the partial batch: see the class comment
  auto& entry = seen(key);
  if (entry.graph) return Action::replay;
  if (keys_.size() > options_.max_shapes) {
    give_up("dynamic shapes: " + std::to_string(keys_.size()) + " different step shapes so far");
    return Action::eager;
  }
  if (entry.eager_steps < options_.warmup_steps) {
    ++entry.eager_steps;
    return Action::eager;
  }
  if (captures_ >= options_.max_captures) {
    give_up("dynamic shapes: the step's shape changed " + std::to_string(captures_) + " times");
    return Action::eager;
  }
  return Action::capture;
}

std::optional<GraphKey> CapturePlan::captured(const GraphKey& key) {
  ++captures_;
  seen(key).graph = true;
  std::size_t graphs = 0;
  for (auto& entry : keys_)
    if (entry.graph && ++graphs > options_.max_graphs) {
      entry.graph = false;
      entry.eager_steps = 0;  // should it come back, it warms up again first
      return entry.key;
    }
  return std::nullopt;
}

std::string capture_timing_text(const CaptureTiming& t) {
  const auto s = [](double seconds) { return core::format_fixed(seconds, 2) + " s"; };
  return s(t.total) + ": " + s(t.settling) + " settling, " + s(t.recording) + " recording, " + s(t.instantiating) + " instantiating, " +
         s(t.first_replay) + " the first replay";
}

}  // namespace gputrain::train

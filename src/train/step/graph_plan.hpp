#pragma once
// The decisions behind CUDA-graph steps (graph_step.cpp), kept apart from CUDA so the CPU build
// tests them: whether a run may capture its steps at all (GraphConditions -> GraphDecision), and
// for each step whether it runs eagerly, is captured, or replays a graph (CapturePlan).

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

namespace gputrain::train {

/// What decides, before the first step, whether a run's steps can be captured.
struct GraphConditions {
  std::string setting = "auto";  ///< train.cuda_graphs: auto, on, off
  bool cuda = false;             ///< the run's device is a CUDA GPU
  /// The engine that all-reduces the gradients across ranks ("nccl", "gloo", "mpi"); empty: a
  /// plain run. NCCL's all-reduces are captured with the step; the others run on the host.
  std::string gradient_sync;
  bool sharded_optimizer = false;  ///< distributed.shard_optimizer: its steps are not captured yet
  std::string eager_callback;      ///< the name of a callback that needs eager steps; empty: none
  bool device_stepped = true;      ///< the optimizer steps without the host (DeviceStepped)
  bool recomputes_random = false;  ///< train.activation_checkpointing recomputes blocks that draw random numbers
};

struct GraphDecision {
  bool capture = false;
  std::string reason;  ///< why not, when !capture
  /// "on", or "off (reason)": what the log line and metrics.jsonl's start record say.
  std::string summary() const { return capture ? "on" : "off (" + reason + ")"; }
};

/// auto: capture unless a condition rules it out (the reason says which). on: the same, but a
/// condition that rules it out throws UsageError (exit 2) naming it and the fix. off: never.
GraphDecision decide_cuda_graphs(const GraphConditions& conditions);

/// The error for train.cuda_graphs: on when capture turned out impossible while training
/// (`reason`, e.g. the model synchronised with the host inside the step): a UsageError, exit 2.
[[noreturn]] void refuse_cuda_graphs(const std::string& reason);

/// What makes two steps the same graph: the stored inputs' shape, the micro-batch and the samples
/// the step's loss is weighted by.
struct GraphKey {
  std::vector<std::int64_t> input_shape;
  std::int64_t micro_batch = 0, global_rows = 0;
  bool operator==(const GraphKey& other) const {
    return input_shape == other.input_shape && micro_batch == other.micro_batch && global_rows == other.global_rows;
  }
};

/// For each step, what to do with it:
/// - eager for a key's first `warmup_steps` steps: cuDNN's benchmark has chosen its algorithms and
///   the optimizer state exists before capture, so the graph holds the algorithms the run keeps;
/// - eager for a batch smaller than the largest seen (an epoch's last, partial batch): it comes
///   once an epoch, so its graph would pay its memory for little; pad-and-mask would change
///   BatchNorm's batch statistics, and dropping it would change what the run trains on. It runs
///   in the captured step's memory pool (graph_step.cpp), so it needs no memory beside it;
/// - capture the next step, then replay for every later one.
/// At most `max_graphs` graphs stay alive (an OOM split or a new batch size evicts the oldest);
/// a run whose shapes keep changing (more than `max_captures` captures, or `max_shapes` different
/// keys) stops capturing.
class CapturePlan {
 public:
  enum class Action { eager, capture, replay };
  struct Options {
    std::int64_t warmup_steps = 3;
    std::size_t max_graphs = 2;
    std::int64_t max_captures = 8;
    std::size_t max_shapes = 16;  ///< distinct keys seen; past it the shapes count as dynamic
  };
  CapturePlan() : CapturePlan(Options{}) {}
  explicit CapturePlan(Options options) : options_(options) {}

  /// What to do for a step at `key` with `rows` samples. Counts the step.
  Action next(const GraphKey& key, std::int64_t rows);
  /// The capture next() asked for succeeded: later steps at `key` replay. Returns the key whose
  /// graph must now be freed to stay within max_graphs, if any.
  std::optional<GraphKey> captured(const GraphKey& key);
  /// Every graph was freed (an out-of-memory error needs their memory): a shape seen again is
  /// captured anew, without warming up again.
  void released_all() {
    for (auto& entry : keys_) entry.graph = false;
  }
  /// Stops capturing for the rest of the run (a capture failed, or shapes keep changing).
  void give_up(std::string reason) { off_reason_ = std::move(reason); }
  /// Why the run stopped capturing; empty while it captures.
  const std::string& off_reason() const { return off_reason_; }
  std::int64_t captures() const { return captures_; }

 private:
  struct Seen {
    GraphKey key;
    std::int64_t eager_steps = 0;
    bool graph = false;
  };
  Seen& seen(const GraphKey& key);

  Options options_;
  std::list<Seen> keys_;  // most recently used first
  std::int64_t largest_rows_ = 0, captures_ = 0;
  std::string off_reason_;
};

/// How long a capture took, and where (graph_step.cpp measures it, the log line says it).
struct CaptureTiming {
  double settling = 0;       ///< the queue finished and cached blocks handed back
  double recording = 0;      ///< the step's work recorded into the graph (the host's launches)
  double instantiating = 0;  ///< capture_end: CUDA turns the recording into an executable graph
  double first_replay = 0;   ///< the graph's first launch, run to its end
  double total = 0;          ///< from the capture's start to the first replay's end
};

/// "2.41 s: 0.02 s settling, 0.31 s recording, 1.90 s instantiating, 0.18 s the first replay",
/// the part of the log line in parentheses.
std::string capture_timing_text(const CaptureTiming& t);

}  // namespace gputrain::train

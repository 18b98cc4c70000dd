#pragma once
// sizing::MemoryModel: what one training step holds at its peak, as a function of the batch:
// peak(batch) = fixed + per_sample * batch. The fixed part (resident data, parameters,
// gradients, optimizer state, workspaces) and the per-sample part (activations) come from two
// probe steps; parameters, gradients and optimizer state are also known exactly beforehand.

#include <cstdint>
#include <string>
#include <vector>

namespace gputrain::sizing {

/// Bytes that exist whatever the batch, known before any step runs.
struct StaticMemory {
  std::uint64_t parameters = 0;
  std::uint64_t gradients = 0;        ///< one per trainable parameter, in its dtype
  std::uint64_t optimizer_state = 0;  ///< momentum buffers, Adam's two moments
};

/// Optimizer state bytes for `parameter_bytes` of trainable parameters: sgd with momentum keeps
/// one buffer, adam and adamw two, plain sgd none.
std::uint64_t optimizer_state_bytes(const std::string& optimizer, double momentum, std::uint64_t parameter_bytes);

/// One probe step: forward, backward and optimizer step at `batch`. The two phases peak apart:
/// forward and backward hold the activations, which grow with the batch; the optimizer step
/// holds temporaries the size of the parameters, which do not. Fitting the first alone keeps a
/// small batch's constant optimizer peak from hiding the activations' slope.
struct ProbePoint {
  std::int64_t batch = 0;
  bool fits = false;                 ///< false: it raised c10::OutOfMemoryError
  std::uint64_t peak = 0;            ///< highest allocated bytes in forward and backward (fits only)
  std::uint64_t optimizer_peak = 0;  ///< highest allocated bytes in the optimizer step (fits only)
  std::uint64_t activations = 0;     ///< bytes the forward pass kept for backward (fits only)
  double seconds = 0;                ///< wall time of the whole step (fits only)
  /// Bytes still held after the step that were not before it, whatever the batch: libraries'
  /// workspaces made on first use (cuBLAS's, for one), in `activations` of the step that made them.
  std::uint64_t persistent = 0;
  /// CUDA: the caching allocator's highest reserved bytes in the step (0 on the CPU). The memory
  /// fraction limits these, so under a small cap its rounding can decide an OOM the model of
  /// allocated bytes does not see; search_batch_size fits them after such an OOM.
  std::uint64_t reserved_peak = 0;
  /// CUDA graphs, where the probe captured its step too: the eager step's allocated and reserved
  /// peaks, and the captured step's (its eager warm-up, capture and replay). `peak` and
  /// `reserved_peak` are the larger of the two; all 0 where the probe did not capture.
  struct StepPeaks {
    std::uint64_t allocated = 0, reserved = 0;
  };
  StepPeaks eager{}, captured{};
};

/// The fitted model, and the memory it is measured against.
struct MemoryModel {
  StaticMemory known;
  std::uint64_t resident = 0;        ///< allocated before the probes: data kept on the device, parameters
  double fixed = 0;                  ///< fitted peak at batch 0
  double per_sample = 0;             ///< fitted bytes per sample (activations and their gradients)
  std::uint64_t optimizer_peak = 0;  ///< peak of the optimizer step, the same at any batch
  std::uint64_t limit = 0;           ///< what the process may hold in all
  std::string limit_source;          ///< device.max_memory, free GPU memory, cgroup limit, available RAM

  /// The fixed part not explained by resident memory, gradients and optimizer state: allocator
  /// and library workspaces, autocast weight copies, temporaries (never negative).
  std::uint64_t workspace() const;
  /// Predicted peak bytes of a step at `batch`: the larger of its two phases.
  double predicted_peak(std::int64_t batch) const;
  /// The largest batch whose per-sample memory stays within `target_fraction` of what is free
  /// after the fixed part (0 when even that does not fit).
  std::int64_t largest_batch(double target_fraction) const;
};

/// Fits peak = fixed + per_sample * batch by least squares through probes that fit (at least two
/// different batches); the optimizer peak is the largest of theirs.
MemoryModel fit_memory_model(const StaticMemory& known, std::uint64_t resident, const std::vector<ProbePoint>& points, std::uint64_t limit,
                             std::string limit_source);

/// The line through two probes.
MemoryModel fit_memory_model(const StaticMemory& known, std::uint64_t resident, const ProbePoint& a, const ProbePoint& b,
                             std::uint64_t limit, std::string limit_source);

}  // namespace gputrain::sizing

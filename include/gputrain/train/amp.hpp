#pragma once
// Mixed precision from C++: an autocast scope and PyTorch's GradScaler, rebuilt on the ATen ops
// Python's torch.amp.GradScaler uses (LibTorch ships no C++ GradScaler).

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace torch::optim {
class Optimizer;
}

namespace gputrain::train {

/// The dtype a step computes its autocast ops in: fp16 or bf16 for the mixed precisions, fp32 for fp32.
c10::ScalarType compute_dtype(Precision precision);

/// Enables autocast for `device_type` at `precision` (fp16 or bf16) for the scope's lifetime;
/// does nothing for fp32. Leaving the outermost scope clears the autocast weight cache, as
/// Python's `with torch.autocast(...)` does, so casts of updated weights are never reused.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device_type, Precision precision);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_type_;
  bool active_ = false;
  bool was_enabled_ = false;
  c10::ScalarType previous_dtype_;
};

/// PyTorch's defaults (torch.amp.GradScaler).
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

/// Dynamic loss scaling for fp16: scale the loss, unscale gradients (finding inf/nan), skip the
/// optimizer step when any gradient is not finite, then grow or back off the scale.
/// A disabled scaler (fp32, bf16) passes everything through.
/// Nothing here waits for the device: the verdict stays on it (a DeviceStepped optimizer skips
/// the update in its kernel), and so does the count of skipped steps until someone reads it.
class GradScaler {
 public:
  GradScaler(bool enabled, c10::Device device, GradScalerOptions options = {});

  bool enabled() const { return enabled_; }
  const GradScalerOptions& options() const { return options_; }
  /// loss * scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  /// Divides the gradients of `params` by the scale in place and records whether any is inf/nan.
  /// Called at most once per step; step() calls it when the caller did not (e.g. to clip first).
  void unscale(const std::vector<at::Tensor>& params);
  /// Steps `optimizer` over `params` (unscaling first if the caller did not), except where the
  /// gradients held inf/nan: a DeviceStepped optimizer is told to skip on the device; any other
  /// is skipped by the host, which then waits for the verdict.
  void step(const std::vector<at::Tensor>& params, torch::optim::Optimizer& optimizer);
  /// Grows the scale after `growth_interval` clean steps in a row, or backs it off after a skip.
  void update();
  /// Forgets a step that did not complete (a CUDA-graph capture that failed part-way): the next
  /// step unscales its own gradients.
  void forget_step() { unscaled_ = false; }

  /// The current scale (1 when disabled). Waits for the device.
  double scale_value() const;
  /// Steps skipped so far because of inf/nan gradients. Waits for the device.
  std::int64_t skipped_steps() const;

  /// scale, growth tracker and skip count, for checkpoints.
  NamedTensors state() const;
  /// Restores what state() saved.
  void load_state(const NamedTensors& state);

 private:
  bool enabled_;
  GradScalerOptions options_;
  at::Tensor scale_;           // float32 [1], on the device
  at::Tensor growth_tracker_;  // int32 [1], on the device
  at::Tensor found_inf_;       // float32 [], on the device: 1 when this step's gradients held inf/nan
  at::Tensor skipped_;         // float64 [], on the device
  bool unscaled_ = false;
};

}  // namespace gputrain::train

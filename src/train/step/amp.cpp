#include "gputrain/train/amp.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include "gputrain/core/error.hpp"
#include "gputrain/train/optimizer.hpp"

namespace gputrain::train {

c10::ScalarType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::fp16_mixed:
      return at::kHalf;
    case Precision::bf16_mixed:
      return at::kBFloat16;
    case Precision::fp32:
      break;
  }
  return at::kFloat;
}

AutocastScope::AutocastScope(c10::DeviceType device_type, Precision precision) : device_type_(device_type), previous_dtype_(at::kFloat) {
  if (precision == Precision::fp32) return;
  active_ = true;
  was_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::set_autocast_dtype(device_type_, compute_dtype(precision));
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, was_enabled_);
  at::autocast::set_autocast_dtype(device_type_, previous_dtype_);
}

GradScaler::GradScaler(bool enabled, c10::Device device, GradScalerOptions options) : enabled_(enabled), options_(options) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_ = at::full({1}, enabled ? options.init_scale : 1.0, f32);
  growth_tracker_ = at::zeros({1}, f32.dtype(at::kInt));
  found_inf_ = at::zeros({}, f32);
  skipped_ = at::zeros({}, f32.dtype(at::kDouble));
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const { return enabled_ ? loss * scale_.to(loss.device()) : loss; }

void GradScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!enabled_ || unscaled_) return;
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  // Like Python, the reciprocal is taken in double, then stored as float.
  const auto inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  found_inf_.zero_();
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
  unscaled_ = true;
}

void GradScaler::step(const std::vector<at::Tensor>& params, torch::optim::Optimizer& optimizer) {
  auto* on_device = device_stepped(optimizer);
  if (!enabled_) {
    if (on_device) on_device->skip_when({});
    optimizer.step();
    return;
  }
  unscale(params);
  skipped_.add_(found_inf_);
  if (on_device) {
    on_device->skip_when(found_inf_);
    optimizer.step();
  } else if (found_inf_.item<float>() == 0.0f) {
    optimizer.step();
  }
}

void GradScaler::update() {
  if (!enabled_) return;
  if (!unscaled_) found_inf_.zero_();  // a step without gradients counts as clean
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor, options_.growth_interval);
  unscaled_ = false;
}

double GradScaler::scale_value() const { return scale_.item<double>(); }

std::int64_t GradScaler::skipped_steps() const { return static_cast<std::int64_t>(skipped_.item<double>()); }

NamedTensors GradScaler::state() const {
  return {{"scale", scale_}, {"growth_tracker", growth_tracker_}, {"skipped", at::full({1}, skipped_steps(), at::kLong)}};
}

void GradScaler::load_state(const NamedTensors& state) {
  for (const auto& [name, tensor] : state) {
    if (name == "scale")
      scale_.copy_(tensor);
    else if (name == "growth_tracker")
      growth_tracker_.copy_(tensor);
    else if (name == "skipped")
      skipped_.fill_(static_cast<double>(tensor.item<std::int64_t>()));
  }
}

}  // namespace gputrain::train

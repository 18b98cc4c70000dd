#include "frozen_model.hpp"

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>

#include <algorithm>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "weight_matching.hpp"

namespace gputrain::train {
namespace {

bool under_any(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return names_under(name, p); });
}

bool is_batch_norm(torch::nn::Module& m) {
  return m.as<torch::nn::BatchNorm1d>() || m.as<torch::nn::BatchNorm2d>() || m.as<torch::nn::BatchNorm3d>();
}

class FrozenModel final : public Model {
 public:
  FrozenModel(std::unique_ptr<Model> inner, std::vector<std::shared_ptr<torch::nn::Module>> frozen_norms)
      : inner_(std::move(inner)), frozen_norms_(std::move(frozen_norms)) {}
  at::Tensor forward(const at::Tensor& input) override { return inner_->forward(input); }
  std::vector<at::Tensor> parameters() override {
    auto all = inner_->parameters();
    all.erase(std::remove_if(all.begin(), all.end(), [](const at::Tensor& p) { return !p.requires_grad(); }), all.end());
    return all;
  }
  NamedTensors named_state() override { return inner_->named_state(); }
  void to(c10::Device device) override { inner_->to(device); }
  void set_training(bool on) override {
    inner_->set_training(on);
    for (auto& norm : frozen_norms_) norm->eval();
  }
  std::string name() const override { return inner_->name(); }
  torch::nn::Module* module() override { return inner_->module(); }

 private:
  std::unique_ptr<Model> inner_;
  std::vector<std::shared_ptr<torch::nn::Module>> frozen_norms_;
};

}  // namespace

std::unique_ptr<Model> freeze_parameters(std::unique_ptr<Model> model, const std::vector<std::string>& prefixes, std::string& note) {
  const auto state = model->named_state();
  const auto params = model->parameters();
  const auto is_parameter = [&](const at::Tensor& t) {
    return std::any_of(params.begin(), params.end(), [&](const at::Tensor& p) { return p.is_same(t); });
  };
  for (const auto& prefix : prefixes) {
    const bool names_one =
        std::any_of(state.begin(), state.end(), [&](const auto& s) { return names_under(s.first, prefix) && is_parameter(s.second); });
    if (!names_one)
      throw UsageError("train.freeze: '" + prefix + "' names no parameter of model " + model->name() +
                           core::did_you_mean_among(prefix, name_prefixes(state)),
                       "give name prefixes as in the model's state_dict, whole components (its first are " +
                           core::join(name_prefixes(state)).substr(0, 300) + ")");
  }
  std::int64_t frozen = 0, total = 0;
  for (const auto& [name, tensor] : state) {
    if (!is_parameter(tensor)) continue;
    total += tensor.numel();
    if (!under_any(name, prefixes)) continue;
    tensor.requires_grad_(false);
    frozen += tensor.numel();
  }
  if (frozen == total)
    throw UsageError(
        "train.freeze: " + core::join(prefixes) + " freezes every parameter of model " + model->name() + ": nothing would train",
        "leave the head out of train.freeze (for a ResNet: freeze conv1, bn1 and layer1-layer3, and train layer4 and fc)");
  std::vector<std::shared_ptr<torch::nn::Module>> norms;
  if (auto* module = model->module())
    for (const auto& item : module->named_modules("", /*include_self=*/false))
      if (under_any(item.key(), prefixes) && is_batch_norm(*item.value())) norms.push_back(item.value());
  note =
      "train.freeze: " + core::join(prefixes) + ": " + core::format_parameter_count(frozen) + " frozen, of " +
      core::format_parameter_count(total) + " (no gradients, no optimizer state)" +
      (norms.empty() ? "" : "; " + core::counted(static_cast<std::int64_t>(norms.size()), "batch norm") + " under them kept in eval mode");
  return std::make_unique<FrozenModel>(std::move(model), std::move(norms));
}

}  // namespace gputrain::train

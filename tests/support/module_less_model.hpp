#pragma once
// A model with no C++ module behind it, as a TorchScript one is: for the set-up steps that refuse
// such models (model.sync_batch_norm, train.activation_checkpointing).

#include <string>
#include <vector>

#include "gputrain/train/model.hpp"

namespace gputrain::test_support {

class ModuleLessModel final : public train::Model {
 public:
  at::Tensor forward(const at::Tensor& input) override { return input; }
  std::vector<at::Tensor> parameters() override { return {}; }
  train::NamedTensors named_state() override { return {}; }
  void to(c10::Device) override {}
  void set_training(bool) override {}
  std::string name() const override { return "net.pt"; }
};

}  // namespace gputrain::test_support

#include <torch/nn/modules/activation.h>

#include "builtin_models.hpp"

namespace gputrain::train::models {

torch::nn::AnyModule make_activation(const std::string& name) {
  if (name == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (name == "silu") return torch::nn::AnyModule(torch::nn::SiLU());
  if (name == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  return torch::nn::AnyModule(torch::nn::ReLU());
}

}  // namespace gputrain::train::models

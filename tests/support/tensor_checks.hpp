#pragma once
// Comparing what runs trained: a model's parameters as one flat CPU tensor or its state by name,
// states that must agree bit for bit, and tensors that must agree within fp32 rounding, with the
// largest difference in the failure.

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "gputrain/train/model.hpp"
#include "gputrain/train/trainer.hpp"

namespace gputrain::test_support {

/// Every parameter of the trainer's model, flattened and concatenated in order, on the CPU.
inline at::Tensor flat_parameters(train::Trainer& trainer) {
  std::vector<at::Tensor> flat;
  for (auto& p : trainer.model().parameters()) flat.push_back(p.detach().reshape(-1).cpu());
  return at::cat(flat);
}

/// A copy of the trainer's model state (parameters and buffers), by name, as it is now.
inline train::NamedTensors model_state(train::Trainer& trainer) {
  train::NamedTensors copy;
  for (const auto& [name, t] : trainer.model().named_state()) copy.emplace_back(name, t.clone());
  return copy;
}

/// The same names in the same order, each tensor equal bit for bit.
inline void expect_bit_identical(const train::NamedTensors& a, const train::NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << a[i].first << " differs";
  }
}

/// `mine` equals `expected` within `tolerance` (relative and absolute); `what` names it.
inline void expect_close(const at::Tensor& mine, const at::Tensor& expected, const std::string& what, double tolerance = 1e-5) {
  EXPECT_TRUE(at::allclose(mine, expected, tolerance, tolerance))
      << what << ": max difference " << (mine - expected).abs().max().item<double>();
}

}  // namespace gputrain::test_support

#pragma once
// A validation set held out of the training set (data.val_fraction), for data that brings none.

#include <cstdint>
#include <memory>

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

struct HeldOut {
  std::shared_ptr<const Dataset> train, val;
};

/// Splits `set` at random into a training part and a validation part of round(fraction x size)
/// samples, stratified where the set's class ids are known (each class keeps its share in both
/// parts, and at least one sample in training). The split is a pure function of (size, fraction, seed): every rank and every resumed
/// run holds out the same samples. Each part keeps its samples in file order and names them by
/// their place in the file; array sets stay in memory as arrays. Throws UsageError when a part
/// would be empty.
HeldOut hold_out(const std::shared_ptr<const Dataset>& set, double fraction, std::uint64_t seed);

}  // namespace gputrain::data

#pragma once
// Some samples of another dataset, read through it (the hold-out split, the samples that
// data.standardize measures). Private to the data area.

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

/// The samples of `base` at `indices` (int64, in the order given). An array set's samples are
/// also gathered once into arrays of their own, so the cache and the probes see an in-memory set.
std::shared_ptr<const Dataset> subset(std::shared_ptr<const Dataset> base, at::Tensor indices, std::string description);

}  // namespace gputrain::data

#pragma once
// Some samples of another dataset, read through it (the hold-out split, the samples that
// data.standardize measures). Private to the data area.

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

/// The samples of `base` at `indices` (int64, in the order given). An array set's samples are
/// also gathered once into arrays of their own, so the cache and the probes see an in-memory set,
/// and the subset keeps no hold on the base's arrays: once the caller lets go of the base (the
/// hold-out split's parts replace the whole), its memory goes, and the table is held once.
std::shared_ptr<const Dataset> subset(std::shared_ptr<const Dataset> base, const at::Tensor& indices, std::string description);

/// An array set (make_array_dataset) as a stand-in with its size, layout, description and
/// samples' origins but none of its samples; any other set as it is (dataset.cpp).
std::shared_ptr<const Dataset> without_samples(const std::shared_ptr<const Dataset>& set);

}  // namespace gputrain::data

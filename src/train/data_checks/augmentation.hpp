#pragma once
// data.crop_padding and data.hflip augment [channels, height, width] images on the device
// (data::BatchTransform). Set for other samples they did nothing, silently; a padding as wide as
// the image made crops of padding alone (and, at 100,000, a 3.5 TiB batch that the OOM handler
// halved in vain). Private to the train area: open_data (run_setup.cpp) calls it.

#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Throws UsageError when data.crop_padding is at least the images' height or width. Returns a
/// note when an augmentation is set but the samples (shaped `input_shape`) are not images, else "".
std::string check_augmentation(const DataConfig& data, const std::vector<std::int64_t>& input_shape);

}  // namespace gputrain::train

#pragma once
// data.crop_padding as wide as the images made crops of padding alone (and, at 100,000, a 3.5 TiB
// batch that the OOM handler halved in vain). Private to the train area: open_data (run_setup.cpp)
// calls it once the samples' shape is known.

#include <cstdint>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// Throws UsageError when data.crop_padding is at least the height or width of images shaped
/// `input_shape` ([channels, height, width]); other shapes are not cropped (unread_settings says so).
void refuse_crop_wider_than_images(const DataConfig& data, const std::vector<std::int64_t>& input_shape);

}  // namespace gputrain::train

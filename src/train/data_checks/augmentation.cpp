#include "augmentation.hpp"

#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include <algorithm>

#include "gputrain/core/error.hpp"

namespace gputrain::train {

void refuse_crop_wider_than_images(const DataConfig& data, const std::vector<std::int64_t>& input_shape) {
  if (input_shape.size() != 3 || data.crop_padding < std::min(input_shape[1], input_shape[2])) return;
  throw UsageError("data.crop_padding " + std::to_string(data.crop_padding) + " is as wide as the images (" +
                       c10::str(c10::IntArrayRef(input_shape)) +
                       ") or wider: a random crop could hold padding alone, no pixel of the image",
                   "use a padding well under the image's side, an eighth of it as a rule (4 for 32 x 32 images, as in the CIFAR "
                   "recipes), or 0 for no random crop");
}

}  // namespace gputrain::train

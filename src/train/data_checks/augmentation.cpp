#include "augmentation.hpp"

#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include <algorithm>

#include "gputrain/core/error.hpp"

namespace gputrain::train {

std::string check_augmentation(const DataConfig& data, const std::vector<std::int64_t>& input_shape) {
  const auto shape = c10::str(c10::IntArrayRef(input_shape));
  if (input_shape.size() != 3) {
    std::vector<std::string> set;
    if (data.crop_padding > 0) set.push_back("data.crop_padding " + std::to_string(data.crop_padding));
    if (data.hflip) set.push_back("data.hflip");
    if (set.empty()) return "";
    return "note: " + c10::Join(" and ", set) + (set.size() == 1 ? " augments" : " augment") +
           " images shaped [channels, height, width], but these samples are shaped " + shape + ": " +
           (set.size() == 1 ? "it is" : "they are") + " not applied; remove " + (set.size() == 1 ? "it" : "them");
  }
  const auto side = std::min(input_shape[1], input_shape[2]);
  if (data.crop_padding >= side)
    throw UsageError("data.crop_padding " + std::to_string(data.crop_padding) + " is as wide as the images (" + shape +
                         ") or wider: a random crop could hold padding alone, no pixel of the image",
                     "use a padding well under the image's side, an eighth of it as a rule (4 for 32 x 32 images, as in the "
                     "CIFAR recipes), or 0 for no random crop");
  return "";
}

}  // namespace gputrain::train

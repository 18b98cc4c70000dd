#pragma once
// A folder of JPEG and PNG images, one sub-folder per class (torchvision's ImageFolder layout).

#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

/// Lists `root`: classes are its sub-folders in sorted order (`classes`, when not empty, fixes
/// them, so a validation folder uses the training folder's ids). Dot-files and dot-folders are
/// passed over; other files that are not .jpg/.jpeg/.png are counted and named in description().
/// A training class folder without images is a UsageError. Files are decoded when read.
std::shared_ptr<Dataset> open_image_folder(const std::string& root, std::int64_t height, std::int64_t width,
                                           std::vector<std::string> classes = {});

/// The class names of an image-folder dataset made by open_image_folder.
std::vector<std::string> image_folder_classes(const Dataset& dataset);

}  // namespace gputrain::data

#pragma once
// A folder of JPEG and PNG images, one sub-folder per class (torchvision's ImageFolder layout).

#include <memory>
#include <string>
#include <vector>

#include "gputrain/data/dataset.hpp"

namespace gputrain::data {

/// Lists `root`: classes are its sub-folders in sorted order (`classes`, when not empty, fixes
/// them, so a validation folder uses the training folder's ids). Dot-files and dot-folders are
/// passed over, and so are Thumbs.db and desktop.ini; other files that are not .jpg/.jpeg/.png
/// are counted and named in description(), images of other formats by extension.
/// A training class folder without images is a UsageError. Files are decoded when read.
std::shared_ptr<Dataset> open_image_folder(const std::string& root, std::int64_t height, std::int64_t width,
                                           std::vector<std::string> classes = {});

/// When a folder made by open_image_folder holds images in formats that are not decoded (.webp,
/// .bmp, .gif, .tif, .heic, ...): how many, what they are left out of (`left_out_of`: "trained
/// on", "validated on"), and the Pillow line that writes a .png beside each; empty otherwise.
std::string image_folder_conversion_note(const Dataset& dataset, const std::string& left_out_of);

/// The class names of an image-folder dataset made by open_image_folder: its folders' names as
/// they are on disk, byte for byte.
std::vector<std::string> image_folder_classes(const Dataset& dataset);

/// Folder names as text for model.safetensors and the records, which hold UTF-8: each name that
/// is not UTF-8 (a folder named on a Latin-1 system) read as Windows-1252, and when there is one,
/// a note naming it and how it reads.
std::vector<std::string> class_names_as_utf8(const std::vector<std::string>& folders, std::string& note);

}  // namespace gputrain::data

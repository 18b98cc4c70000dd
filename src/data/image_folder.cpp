#include "image_folder.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gputrain/core/error.hpp"
#include "image_decode.hpp"

namespace gputrain::data {
namespace fs = std::filesystem;
namespace {

bool is_image(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

class ImageFolder final : public Dataset {
 public:
  ImageFolder(std::string root, std::int64_t height, std::int64_t width, std::vector<std::string> classes)
      : root_(std::move(root)), classes_(std::move(classes)) {
    if (!fs::is_directory(root_)) throw UsageError("'" + root_ + "' is not a folder", "point data.path at a folder with one sub-folder per class");
    const bool fixed = !classes_.empty();
    if (!fixed) {
      for (const auto& entry : fs::directory_iterator(root_))
        if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
      std::sort(classes_.begin(), classes_.end());
    }
    if (classes_.empty()) throw UsageError("'" + root_ + "' has no sub-folders", "put each class's images in a sub-folder named after the class");
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const fs::path folder = fs::path(root_) / classes_[c];
      if (!fs::is_directory(folder)) continue;  // a validation folder may lack a class
      std::vector<std::string> names;
      for (const auto& entry : fs::recursive_directory_iterator(folder))
        if (entry.is_regular_file() && is_image(entry.path())) names.push_back(fs::relative(entry.path(), root_).string());
      std::sort(names.begin(), names.end());
      for (auto& n : names) files_.push_back({std::move(n), static_cast<std::int64_t>(c)});
    }
    if (fixed)
      for (const auto& entry : fs::directory_iterator(root_))
        if (entry.is_directory() && std::find(classes_.begin(), classes_.end(), entry.path().filename().string()) == classes_.end())
          throw UsageError("'" + entry.path().string() + "' is a class the training folder does not have",
                           "use the same class sub-folders for training and validation");
    if (files_.empty()) throw UsageError("'" + root_ + "' holds no .jpg, .jpeg or .png files", "put images in its class sub-folders");
    layout_.input_shape = {3, height, width};
    layout_.input_dtype = at::kByte;
    layout_.target_dtype = at::kLong;
  }
  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t index, void* input, void* target) const override {
    const auto& file = files_[static_cast<std::size_t>(index)];
    std::ifstream in(fs::path(root_) / file.name, std::ios::binary | std::ios::ate);
    if (!in) throw SkippedSample("cannot open the file");
    const auto size = static_cast<std::size_t>(in.tellg());
    std::vector<unsigned char> bytes(size);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!in) throw SkippedSample("cannot read the file");
    decode_image_into(bytes.data(), bytes.size(), layout_.input_shape[1], layout_.input_shape[2], static_cast<std::uint8_t*>(input));
    *static_cast<std::int64_t*>(target) = file.label;
  }
  std::string origin(std::int64_t index) const override { return (fs::path(root_) / files_[static_cast<std::size_t>(index)].name).string(); }
  std::string description() const override {
    return "image folder " + root_ + " (" + std::to_string(files_.size()) + " images, " + std::to_string(classes_.size()) + " classes)";
  }
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  struct File {
    std::string name;  // relative to root_
    std::int64_t label;
  };
  std::string root_;
  std::vector<std::string> classes_;
  std::vector<File> files_;
  SampleLayout layout_;
};

}  // namespace

std::shared_ptr<Dataset> open_image_folder(const std::string& root, std::int64_t height, std::int64_t width, std::vector<std::string> classes) {
  return std::make_shared<ImageFolder>(root, height, width, std::move(classes));
}

std::vector<std::string> image_folder_classes(const Dataset& dataset) {
  const auto* folder = dynamic_cast<const ImageFolder*>(&dataset);
  return folder ? folder->classes() : std::vector<std::string>{};
}

}  // namespace gputrain::data

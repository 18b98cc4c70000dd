#include "image_folder.hpp"

#include <ATen/ops/empty.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/text_encoding.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/core/write_error.hpp"
#include "image_decode.hpp"
#include "path_text.hpp"

namespace gputrain::data {
namespace fs = std::filesystem;
namespace {

// JPEG under the names Windows and browsers also save it as (.jfif, .jpe): the decoder goes by
// the file's bytes, not its name.
bool is_image(const fs::path& path) {
  const std::string ext = core::lower(path.extension().string());
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".jfif" || ext == ".jpe";
}

// Images in formats gputrain does not decode: said apart from other files, with a conversion.
bool is_other_image(const fs::path& path) {
  static const char* const kFormats[] = {".webp", ".bmp",  ".gif", ".tif", ".tiff", ".heic",
                                         ".heif", ".avif", ".jxl", ".ppm", ".pgm",  ".jp2"};
  const std::string ext = core::lower(path.extension().string());
  return std::find(std::begin(kFormats), std::end(kFormats), ext) != std::end(kFormats);
}

// x.webp beside an x.png (or .jpg, .jpeg) of its own: converted already, and trained on as that.
bool has_decodable_copy(fs::path path) {
  for (const char* ext : {".png", ".jpg", ".jpeg", ".PNG", ".JPG", ".JPEG"})
    if (fs::exists(path.replace_extension(ext))) return true;
  return false;
}

// What Windows leaves in image folders; like dot-files, the tools', not the user's.
bool is_system_file(const fs::path& path) {
  const std::string name = core::lower(path.filename().string());
  return name == "thumbs.db" || name == "desktop.ini" || name == "ehthumbs.db";
}

// Dot-files and dot-folders (.DS_Store, .ipynb_checkpoints, .git) are the tools', not the user's:
// a class named .ipynb_checkpoints is torchvision's best-known ImageFolder surprise. lost+found is
// the filesystem's, at the root of a data volume, and only root may read it.
bool is_hidden(const fs::path& path) {
  const auto name = path.filename().string();
  return name.rfind('.', 0) == 0 || name == "lost+found";
}

// A gputrain run's folder (its .gputrain.lock) at most two levels into `folder`: a logging.dir
// that was put inside the images, which then read as a class with no images.
std::string run_folder_in(const fs::path& folder) {
  std::error_code ec;
  if (core::DirectoryLock::used_by_a_run(folder.string())) return folder.string();
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() >= 1) it.disable_recursion_pending();
    if (it->is_directory(ec) && core::DirectoryLock::used_by_a_run(it->path().string())) return it->path().string();
  }
  return "";
}

std::string composed(std::string name) {
  core::to_nfc(name);
  return name;
}

// Two folders whose names differ in their Unicode form alone (one copied from a Mac, which writes
// names decomposed) would be two classes that print alike.
void refuse_one_name_spelt_twice(const std::string& root, const std::vector<std::string>& folders) {
  std::map<std::string, std::string> seen;
  for (const auto& folder : folders)
    if (const auto [first, fresh] = seen.emplace(composed(folder), folder); !fresh) {
      const bool first_decomposed = composed(first->second) != first->second;
      throw UsageError("'" + (fs::path(root) / first->second).string() + "' and '" + (fs::path(root) / folder).string() +
                           "' are one name in two Unicode forms (the " + (first_decomposed ? "first" : "second") +
                           " decomposed, as macOS writes names): two classes that print alike",
                       "move the images of one into the other, and remove the empty one");
    }
}

class ImageFolder final : public Dataset {
 public:
  ImageFolder(std::string root, std::int64_t height, std::int64_t width, std::vector<std::string> classes)
      : root_(std::move(root)), classes_(std::move(classes)) {
    if (!fs::is_directory(root_)) throw not_a_folder(root_, "point data.path at a folder with one sub-folder per class");
    const bool fixed = !classes_.empty();
    std::vector<std::string> folders;  // the visible sub-folders
    for (const auto& entry : fs::directory_iterator(root_)) {
      if (is_hidden(entry.path())) continue;
      if (entry.is_directory())
        folders.push_back(entry.path().filename().string());
      else if (entry.is_regular_file())
        note_outside_classes(entry.path());
    }
    std::sort(folders.begin(), folders.end());
    refuse_one_name_spelt_twice(root_, folders);
    if (!fixed) classes_ = folders;
    class_folders_ = classes_;
    if (classes_.empty())
      throw UsageError(
          "'" + root_ + "' has no sub-folders" +
              (outside_classes_ > 0 ? ": its " + core::counted(outside_classes_, "image") + " lie directly in it, where none has a class"
                                    : ""),
          "put each class's images in a sub-folder named after the class (" + (fs::path(root_) / "CLASS" / "IMAGE.jpg").string() + ")");
    for (const auto& folder : folders)
      if (std::find(classes_.begin(), classes_.end(), folder) == classes_.end()) {
        // The training folder's class under another Unicode form of its name (copied from a Mac).
        const auto same = std::find_if(classes_.begin(), classes_.end(), [&](const auto& c) { return composed(c) == composed(folder); });
        if (same != classes_.end()) {
          class_folders_[static_cast<std::size_t>(same - classes_.begin())] = folder;
          continue;
        }
        throw UsageError("'" + (fs::path(root_) / folder).string() + "' is a class the training folder does not have" +
                             core::did_you_mean_among(folder, classes_),
                         "the model learns the training folder's classes only (" + core::join_first(classes_, 40) +
                             "): rename the folder, or move it out of the validation folder");
      }
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const fs::path folder = fs::path(root_) / class_folders_[c];
      if (!fs::is_directory(folder)) continue;  // a validation folder may lack a class
      const auto other_images_before = other_image_count();
      auto names = images_in(folder);
      if (names.empty() && !fixed) {
        const auto others = other_image_count() - other_images_before;
        if (others > 0)
          throw UsageError("class '" + classes_[c] + "' has no images gputrain decodes: '" + folder.string() +
                               "' holds no .jpg, .jpeg or .png files, but " + core::counted(others, "image") + " in other formats (" +
                               core::join(other_extensions(), " or ") + ")",
                           "convert them: Pillow writes a .png beside each with " + conversion_command(folder.string()));
        if (const auto run = run_folder_in(folder); !run.empty())
          throw UsageError(
              "class '" + classes_[c] + "' has no images: '" + folder.string() + "' holds a gputrain run ('" + run +
                  "'), put inside the image folder, whose sub-folders are its classes",
              "move '" + folder.string() + "' out of '" + root_ + "', and give runs a logging.dir outside it (logging.dir: runs/NAME)");
        throw UsageError("class '" + classes_[c] + "' has no images: '" + folder.string() + "' holds no .jpg, .jpeg or .png files",
                         "add its images, or move the folder out of '" + root_ + "' if it is not a class");
      }
      std::sort(names.begin(), names.end());
      for (auto& n : names) files_.push_back({std::move(n), static_cast<std::int64_t>(c)});
    }
    if (files_.empty()) throw UsageError("'" + root_ + "' holds no .jpg, .jpeg or .png files", "put images in its class sub-folders");
    layout_.input_shape = {3, height, width};
    layout_.input_dtype = at::kByte;
    layout_.target_dtype = at::kLong;
  }
  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  const SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t index, void* input, void* target) const override {
    const auto& file = files_[static_cast<std::size_t>(index)];
    errno = 0;
    std::ifstream in(fs::path(root_) / file.name, std::ios::binary | std::ios::ate);
    if (!in) {
      const int error = errno;
      const std::string why = error ? std::string("cannot open the file: ") + std::strerror(error) : "cannot open the file";
      if (auto fix = core::open_files_limit_remedy(error)) throw Error(why, std::move(*fix));  // every image after it fails too
      throw SkippedSample(why);
    }
    const auto size = static_cast<std::size_t>(in.tellg());
    std::vector<unsigned char> bytes(size);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!in) throw SkippedSample("cannot read the file");
    decode_image_into(bytes.data(), bytes.size(), layout_.input_shape[1], layout_.input_shape[2], static_cast<std::uint8_t*>(input));
    *static_cast<std::int64_t*>(target) = file.label;
  }
  std::string origin(std::int64_t index) const override {
    return (fs::path(root_) / files_[static_cast<std::size_t>(index)].name).string();
  }
  std::string description() const override {
    std::string text = "image folder " + root_ + " (" + core::counted(static_cast<std::int64_t>(files_.size()), "image") + ", " +
                       core::counted(static_cast<std::int64_t>(classes_.size()), "class");
    if (!other_images_.empty()) {
      std::vector<std::string> counts;
      for (const auto& [ext, count] : other_images_) counts.push_back(std::to_string(count) + " " + ext);
      text += "; " + core::counted(other_image_count(), "image") + " in formats not read (" + core::join(counts) + ")";
    }
    if (outside_classes_ > 0)
      text += "; " + core::counted(outside_classes_, "image") + " outside the class sub-folders not read, e.g. '" + first_outside_ +
              "' (an image's class is the sub-folder it is in)";
    if (ignored_ > 0)
      text +=
          "; " + std::to_string(ignored_) + (ignored_ == 1 ? " other file" : " other files") + " not read, e.g. '" + first_ignored_ + "'";
    if (ignored_ > 0 || !other_images_.empty()) text += ": only .jpg, .jpeg and .png are";
    return text + ")";
  }
  std::optional<at::Tensor> class_ids() const override {
    auto ids = at::empty({size()}, at::kLong);
    auto* out = ids.data_ptr<std::int64_t>();
    for (const auto& file : files_) *out++ = file.label;
    return ids;
  }
  const std::vector<std::string>& classes() const { return classes_; }

  std::string conversion_note(const std::string& left_out_of) const {
    if (other_images_.empty()) return "";
    const auto count = other_image_count();
    return core::counted(count, "image") + " in " + root_ + " " + (count == 1 ? "is " : "are ") + core::join(other_extensions(), " or ") +
           ", which gputrain does not decode, so " + (count == 1 ? "it is" : "they are") + " not " + left_out_of +
           "; Pillow writes a .png beside each: " + conversion_command(root_);
  }

 private:
  struct File {
    std::string name;  // relative to root_
    std::int64_t label;
  };
  // Files of other formats (.bmp, .webp, notes) are left out, but said so: a user who converted
  // half a dataset to WebP should not find out from the accuracy.
  void note_ignored(const fs::path& path) {
    if (is_system_file(path)) return;
    if (is_other_image(path)) {
      if (!has_decodable_copy(path)) ++other_images_[core::lower(path.extension().string())];
      return;
    }
    if (ignored_++ == 0 || path.string() < first_ignored_) first_ignored_ = path.string();  // the same example on every file system
  }
  // A class folder's images, relative to root_, found as torchvision's ImageFolder finds them
  // (os.walk, following links): in linked sub-folders too, each folder once, so a link back up
  // does not loop. A dangling link counts as its file, to be named unreadable when it is read.
  std::vector<std::string> images_in(const fs::path& folder) {
    std::vector<std::string> names;
    std::set<std::pair<dev_t, ino_t>> seen;
    const auto first_visit = [&seen](const fs::path& dir) {
      struct stat status {};
      return ::stat(dir.c_str(), &status) != 0 || seen.insert({status.st_dev, status.st_ino}).second;
    };
    first_visit(folder);
    for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory()) {
        if (is_hidden(it->path()) || !first_visit(it->path())) it.disable_recursion_pending();
        continue;
      }
      if (is_hidden(it->path()) || (!it->is_regular_file() && !(it->is_symlink() && !fs::exists(it->status())))) continue;
      if (is_image(it->path()))
        names.push_back(it->path().lexically_relative(root_).string());
      else
        note_ignored(it->path());
    }
    return names;
  }
  // An image directly in the root has no class folder, so no label: left out, and said apart from
  // the files left out for their format.
  void note_outside_classes(const fs::path& path) {
    if (!is_image(path) && !is_other_image(path)) return note_ignored(path);
    if (outside_classes_++ == 0 || path.string() < first_outside_) first_outside_ = path.string();
  }
  std::vector<std::string> other_extensions() const {
    std::vector<std::string> extensions;
    for (const auto& entry : other_images_) extensions.push_back(entry.first);
    return extensions;
  }
  // The Pillow line that writes a .png beside each image of `folder` in the formats met so far.
  std::string conversion_command(const std::string& folder) const {
    std::vector<std::string> quoted;
    for (const auto& ext : other_extensions()) quoted.push_back("'" + ext + "'");
    return "python3 -c \"import pathlib, PIL.Image as I; [I.open(p).convert('RGB').save(p.with_suffix('.png')) for p in pathlib.Path('" +
           folder + "').rglob('*') if p.suffix.lower() in (" + core::join(quoted) + (quoted.size() == 1 ? "," : "") + ")]\"";
  }
  std::int64_t other_image_count() const {
    std::int64_t count = 0;
    for (const auto& entry : other_images_) count += entry.second;
    return count;
  }

  std::string root_;
  std::vector<std::string> classes_;
  std::vector<std::string> class_folders_;  // each class's folder: its name, or the same in another Unicode form
  std::vector<File> files_;
  std::int64_t ignored_ = 0;
  std::string first_ignored_;
  std::int64_t outside_classes_ = 0;  // images directly in the root
  std::string first_outside_;
  std::map<std::string, std::int64_t> other_images_;  // by extension, lower case: images of formats not decoded
  SampleLayout layout_;
};

}  // namespace

std::shared_ptr<Dataset> open_image_folder(const std::string& root, std::int64_t height, std::int64_t width,
                                           std::vector<std::string> classes) {
  return std::make_shared<ImageFolder>(root, height, width, std::move(classes));
}

std::string image_folder_conversion_note(const Dataset& dataset, const std::string& left_out_of) {
  const auto* folder = dynamic_cast<const ImageFolder*>(&dataset);
  return folder ? folder->conversion_note(left_out_of) : std::string();
}

std::vector<std::string> class_names_as_utf8(const std::vector<std::string>& folders, std::string& note) {
  std::vector<std::string> names;
  std::string first;  // the first name read as Windows-1252
  std::int64_t decoded = 0;
  for (const auto& folder : folders) {
    names.push_back(core::as_utf8(folder));
    if (names.back() != folder && decoded++ == 0) first = names.back();
  }
  if (decoded > 0)
    note = (decoded == 1 ? "class folder '" + first + "' is" : core::counted(decoded, "class folder") + " (e.g. '" + first + "') are") +
           " not named in UTF-8: read as Windows-1252 in model.safetensors and the records; if a name reads wrong, rename the folder "
           "in UTF-8";
  return names;
}

std::vector<std::string> image_folder_classes(const Dataset& dataset) {
  const auto* folder = dynamic_cast<const ImageFolder*>(&dataset);
  return folder ? folder->classes() : std::vector<std::string>{};
}

}  // namespace gputrain::data

#include "gputrain/data/idx_format.hpp"

#include <ATen/ATen.h>

#include <filesystem>

#include "array_bytes.hpp"
#include "gputrain/core/error.hpp"
#include "gzip_data.hpp"
#include "mapped_file.hpp"
#include "path_text.hpp"

namespace gputrain::data {
namespace fs = std::filesystem;
namespace {

UsageError bad_idx(const std::string& path, const std::string& why) {
  return UsageError("'" + path + "' is not a valid IDX file: " + why, "download the file again (MNIST's files are IDX, plain or .gz)");
}

at::Tensor idx_from_bytes(const unsigned char* bytes, std::size_t size, const std::string& path, const std::shared_ptr<const void>& owner) {
  if (size < 4 || bytes[0] != 0 || bytes[1] != 0) throw bad_idx(path, "it does not start with the IDX magic bytes 0x00 0x00");
  at::ScalarType type;
  switch (bytes[2]) {
    case 0x08:
      type = at::kByte;
      break;
    case 0x09:
      type = at::kChar;
      break;
    case 0x0B:
      type = at::kShort;
      break;
    case 0x0C:
      type = at::kInt;
      break;
    case 0x0D:
      type = at::kFloat;
      break;
    case 0x0E:
      type = at::kDouble;
      break;
    default:
      throw bad_idx(
          path, "unknown element type 0x" + [&] {
            char b[8];
            std::snprintf(b, sizeof b, "%02x", bytes[2]);
            return std::string(b);
          }());
  }
  const int dims = bytes[3];
  if (dims == 0 || size < 4 + 4 * static_cast<std::size_t>(dims)) throw bad_idx(path, "the file ends inside its header");
  std::vector<std::int64_t> shape;
  for (int d = 0; d < dims; ++d) {
    const auto* p = bytes + 4 + 4 * d;
    shape.push_back((std::int64_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
  }
  const std::size_t offset = 4 + 4 * static_cast<std::size_t>(dims), item = c10::elementSize(type);
  const auto promised = array_bytes(shape, item);
  if (!promised) throw bad_idx(path, "its shape " + shape_text(shape) + " is too large for any file");
  const std::size_t count = *promised / item;
  if (size - offset != *promised)
    throw bad_idx(path, "its header promises " + std::to_string(*promised) + " bytes of data, the file has " +
                            std::to_string(size - offset) + (size - offset < *promised ? " (truncated)" : " (trailing bytes)"));
  if (owner && item == 1)
    return at::from_blob(
        const_cast<unsigned char*>(bytes + offset), shape, [owner](void*) {}, at::TensorOptions().dtype(type));
  auto t = at::empty(shape, at::TensorOptions().dtype(type));
  auto* out = static_cast<unsigned char*>(t.data_ptr());
  for (std::size_t i = 0; i < count; ++i)  // IDX is big-endian
    for (std::size_t b = 0; b < item; ++b) out[i * item + b] = bytes[offset + i * item + (item - 1 - b)];
  return t;
}

std::vector<std::string> image_names(const std::string& split) { return {split + "-images-idx3-ubyte", split + "-images.idx3-ubyte"}; }

// The first of `names` (plain or .gz) in `folder`, or "" when none is there.
std::string existing_file(const std::string& folder, const std::vector<std::string>& names) {
  for (const auto& name : names)
    for (const char* suffix : {"", ".gz"})
      if (fs::exists(fs::path(folder) / (name + suffix))) return (fs::path(folder) / (name + suffix)).string();
  return "";
}

std::string find_file(const std::string& folder, const std::vector<std::string>& names) {
  if (auto path = existing_file(folder, names); !path.empty()) return path;
  throw UsageError("no " + names.front() + "[.gz] in '" + folder + "'",
                   "point data.path at the folder holding MNIST's IDX files (train-images-idx3-ubyte, ...)");
}

}  // namespace

at::Tensor read_idx(const std::string& path) {
  const auto file = MappedFile::open(path);
  if (is_gzip(file->data(), file->size())) {  // MNIST's downloads are .gz
    const auto bytes = inflate_gzip(file->data(), file->size(), path);
    return idx_from_bytes(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), path, nullptr);
  }
  return idx_from_bytes(file->data(), file->size(), path, file);
}

TensorDataset read_mnist(const std::string& folder, const std::string& split) {
  if (!fs::is_directory(folder))
    throw not_a_folder(folder,
                       "point data.path at the folder holding MNIST's IDX files (train-images-idx3-ubyte.gz and the "
                       "three others from https://yann.lecun.com/exdb/mnist/ or a mirror; plain or .gz)");
  const auto images_path = find_file(folder, image_names(split));
  const auto labels_path = find_file(folder, {split + "-labels-idx1-ubyte", split + "-labels.idx1-ubyte"});
  auto images = read_idx(images_path);
  auto labels = read_idx(labels_path);
  if (images.dim() != 3)
    throw bad_idx(images_path, "MNIST images have 3 dimensions [N, rows, columns], this file has " + std::to_string(images.dim()));
  if (labels.dim() != 1) throw bad_idx(labels_path, "MNIST labels have 1 dimension, this file has " + std::to_string(labels.dim()));
  if (images.size(0) != labels.size(0))
    throw UsageError("'" + images_path + "' has " + std::to_string(images.size(0)) + " images but '" + labels_path + "' has " +
                         std::to_string(labels.size(0)) + " labels",
                     "use the images and labels of the same split");
  return {images.unsqueeze(1), labels.to(at::kLong)};
}

bool mnist_has_split(const std::string& folder, const std::string& split) { return !existing_file(folder, image_names(split)).empty(); }

std::vector<std::string> cifar10_files(const std::string& folder, bool train) {
  if (!fs::is_directory(folder))
    throw not_a_folder(folder,
                       "point data.path at the cifar-10-batches-bin folder (unpack "
                       "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz, the binary version)");
  std::vector<std::string> names;
  if (train) {
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  std::vector<std::string> files;
  for (const auto& name : names) {
    const auto path = fs::path(folder) / name;
    if (fs::exists(path)) files.push_back(path.string());
  }
  if (files.empty())
    throw UsageError("no " + names.front() + " in '" + folder + "'",
                     "point data.path at the cifar-10-batches-bin folder (data_batch_1.bin ... test_batch.bin)");
  return files;
}

TensorDataset read_cifar10(const std::vector<std::string>& files) {
  constexpr std::int64_t kPixels = 3 * 32 * 32, kRecord = kPixels + 1;
  std::vector<std::shared_ptr<const MappedFile>> maps;
  std::int64_t total = 0;
  for (const auto& path : files) {
    maps.push_back(MappedFile::open(path));
    const auto size = static_cast<std::int64_t>(maps.back()->size());
    if (size == 0 || size % kRecord != 0)
      throw UsageError("'" + path + "' is not a CIFAR-10 binary batch: " + std::to_string(size) + " bytes is not a whole number of " +
                           std::to_string(kRecord) + "-byte records",
                       "download cifar-10-binary.tar.gz again and point data.path at its cifar-10-batches-bin folder");
    total += size / kRecord;
  }
  TensorDataset set{at::empty({total, 3, 32, 32}, at::kByte), at::empty({total}, at::kLong)};
  auto* pixels = set.inputs.data_ptr<std::uint8_t>();
  auto* labels = set.targets.data_ptr<std::int64_t>();
  std::int64_t row = 0;
  for (const auto& map : maps) {
    for (std::int64_t r = 0; r < static_cast<std::int64_t>(map->size()) / kRecord; ++r, ++row) {
      const auto* record = map->data() + r * kRecord;
      if (record[0] > 9)
        throw UsageError(
            "'" + map->path() + "' record " + std::to_string(r) + " has label " + std::to_string(record[0]) + "; CIFAR-10 has 0-9",
            "this is not a CIFAR-10 batch (CIFAR-100's binary files have two label bytes)");
      labels[row] = record[0];
      std::memcpy(pixels + row * kPixels, record + 1, kPixels);
    }
  }
  return set;
}

}  // namespace gputrain::data

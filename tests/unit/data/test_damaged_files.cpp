// Files damaged the way disks, downloads and copies damage them: every reader, given a file that
// the reference library wrote, cut short at every length or with bytes overwritten at seeded
// random places, either reads it (the damage hit only sample values) or throws a UsageError
// (SkippedSample for an image) that names the file. Never a crash, a hang, another exception or a
// huge allocation from a length field gone wild. A read that succeeds is summed, so a memory-mapped
// tensor that reaches past the end of its file would fault here rather than in a user's run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "data/image_decode.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/idx_format.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "support/scratch_folder.hpp"

using namespace gputrain;
using namespace gputrain::data;

namespace {

std::string fixture(const std::string& name) { return std::string(GPUTRAIN_FORMAT_FIXTURES) + "/" + name; }

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Touches every element, so a mapping that promised more bytes than the file has faults now.
void touch(const at::Tensor& tensor) {
  if (tensor.numel() > 0) (void)tensor.to(at::kDouble).sum().item<double>();
}

/// What a reader does with one damaged file: reads it, or throws.
using Reader = std::function<void(const std::string& path)>;

/// The outcome of one damaged read, for the failure message: empty when it is an accepted one.
std::string unexpected_outcome(const Reader& read, const std::string& path, const std::string& name) {
  try {
    read(path);
    return "";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    if (message.find(name) == std::string::npos) return "a UsageError that does not name the file: " + message;
    return "";
  } catch (const SkippedSample& e) {
    return "";
  } catch (const std::bad_alloc&) {
    return "std::bad_alloc (a length field was trusted)";
  } catch (const std::exception& e) {
    return std::string("an exception that is no UsageError: ") + e.what();
  }
}

/// The lengths to cut a file at: every one up to `dense` bytes (the headers), then about 64 more
/// spread over the rest, and one byte short of whole.
std::vector<std::size_t> cut_lengths(std::size_t size, std::size_t dense = 512) {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n < std::min(size, dense); ++n) lengths.push_back(n);
  if (size > dense) {
    const std::size_t stride = std::max<std::size_t>(1, (size - dense) / 64);
    for (std::size_t n = dense; n < size; n += stride) lengths.push_back(n);
  }
  if (size > 0) lengths.push_back(size - 1);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

/// Seeded overwrites: 1 to 4 bytes each, most in the first 256 bytes (where the lengths, shapes
/// and offsets are), some set to the extremes a length field turns absurd with (0x00, 0x7f, 0xff).
std::vector<std::string> overwritten_copies(const std::string& bytes, int copies, std::uint32_t seed) {
  std::mt19937 random(seed);
  const std::uint8_t extremes[] = {0x00, 0x7f, 0x80, 0xff};
  std::vector<std::string> damaged;
  for (int copy = 0; copy < copies; ++copy) {
    std::string changed = bytes;
    const int count = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < count && !changed.empty(); ++i) {
      const std::size_t span = (random() % 4 != 0) ? std::min<std::size_t>(changed.size(), 256) : changed.size();
      const std::size_t at = random() % span;
      changed[at] = static_cast<char>(random() % 2 ? extremes[random() % 4] : static_cast<std::uint8_t>(random()));
    }
    if (changed != bytes) damaged.push_back(std::move(changed));
  }
  return damaged;
}

/// Cuts and overwrites `original` and hands every damaged copy to `read`, under the fixture's own
/// file name so that an error naming the file names this copy.
void sweep(const std::string& original, const Reader& read, int overwrites = 300) {
  const std::string bytes = bytes_of(fixture(original));
  ASSERT_FALSE(bytes.empty()) << original;
  const std::string name = std::filesystem::path(original).filename().string();
  test_support::ScratchFolder scratch("damaged-" + name);
  const std::filesystem::path path = scratch.path / name;

  write_bytes(path, bytes);
  ASSERT_EQ(unexpected_outcome(read, path.string(), name), "") << "the undamaged " << original;

  int failures = 0;
  for (const std::size_t length : cut_lengths(bytes.size())) {
    write_bytes(path, bytes.substr(0, length));
    const std::string outcome = unexpected_outcome(read, path.string(), name);
    if (!outcome.empty() && ++failures <= 5) ADD_FAILURE() << original << " cut to " << length << " bytes: " << outcome;
  }
  int copy = 0;
  for (const std::string& damaged : overwritten_copies(bytes, overwrites, 20261124u + static_cast<std::uint32_t>(bytes.size()))) {
    write_bytes(path, damaged);
    const std::string outcome = unexpected_outcome(read, path.string(), name);
    if (!outcome.empty() && ++failures <= 5) ADD_FAILURE() << original << " overwritten copy " << copy << ": " << outcome;
    ++copy;
  }
}

void read_and_touch_npy(const std::string& path) { touch(read_npy(path)); }

void read_and_touch_npz(const std::string& path) {
  for (const auto& [key, tensor] : read_npz(path)) touch(tensor);
}

void read_and_touch_safetensors(const std::string& path) {
  for (const auto& [key, tensor] : read_safetensors(path)) touch(tensor);
}

void read_and_touch_idx(const std::string& path) { touch(read_idx(path)); }

void read_and_touch_cifar(const std::string& path) {
  const TensorDataset records = read_cifar10({path});
  touch(records.inputs);
  touch(records.targets);
}

/// A CSV's `features` (empty: all its other columns) and its `label` column.
Reader csv_reader(const std::string& label, const std::vector<std::string>& features = {}) {
  return [label, features](const std::string& path) {
    CsvSpec spec;
    spec.labels = {label};
    spec.features = features;
    const TensorDataset table = read_csv(path, spec);
    touch(table.inputs);
    touch(table.targets);
  };
}

void decode_image(const std::string& path) {
  const std::string bytes = bytes_of(path);
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
}

}  // namespace

TEST(DamagedFiles, NpyOfEveryLayoutIsReadOrRefused) {
  for (const char* name : {"npy/f4_le_c.npy", "npy/i8_be_f.npy", "npy/c16_le_f.npy", "npy/b1_le_c.npy"}) {
    sweep(name, read_and_touch_npy);
  }
}

TEST(DamagedFiles, NpzStoredAndDeflatedIsReadOrRefused) {
  sweep("npz/stored.npz", read_and_touch_npz);
  sweep("npz/deflated.npz", read_and_touch_npz);
}

TEST(DamagedFiles, SafetensorsIsReadOrRefused) { sweep("safetensors/train.safetensors", read_and_touch_safetensors); }

TEST(DamagedFiles, IdxPlainAndGzippedIsReadOrRefused) {
  sweep("mnist/train-images-idx3-ubyte", read_and_touch_idx);
  sweep("mnist/t10k-images-idx3-ubyte.gz", read_and_touch_idx);
  sweep("idx/floats.idx", read_and_touch_idx);
}

TEST(DamagedFiles, CifarBatchesAreReadOrRefused) { sweep("cifar/test_batch.bin", read_and_touch_cifar); }

TEST(DamagedFiles, CsvPlainAndGzippedIsReadOrRefused) {
  sweep("csv/numeric.csv", csv_reader("label"));
  sweep("csv/numeric.csv.gz", csv_reader("label"));
  sweep("csv/free_text.csv", csv_reader("label", {"a", "b"}));
}

TEST(DamagedFiles, ImagesAreDecodedOrSkipped) {
  for (const char* name : {"images/exact/rgb.jpg", "images/exact/cmyk.jpg", "images/exact/palette.png", "images/checker.png"}) {
    sweep(name, decode_image);
  }
}

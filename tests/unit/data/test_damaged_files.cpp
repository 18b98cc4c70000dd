// Files damaged the way disks, downloads and copies damage them (support/damaged_copies.hpp): every
// reader, given damaged copies of a file the reference library wrote, either reads it (the damage
// hit only sample values) or throws an error that names the file. A read that succeeds is summed,
// so a memory-mapped tensor that reaches past the end of its file would fault here rather than in a
// user's run.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data/image_decode.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/idx_format.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "support/damaged_copies.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using gputrain::test_support::format_fixture;
using namespace gputrain::data;

namespace {

/// Touches every element, so a mapping that promised more bytes than the file has faults now.
void touch(const at::Tensor& tensor) {
  if (tensor.numel() > 0) (void)tensor.to(at::kDouble).sum().item<double>();
}

using test_support::DamagedFileReader;

void sweep(const std::string& name, const DamagedFileReader& read) { test_support::read_damaged_copies(format_fixture(name), read); }

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
DamagedFileReader csv_reader(const std::string& label, const std::vector<std::string>& features = {}) {
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
  const std::string bytes = test_support::file_bytes(path);
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

// Headers whose sizes multiply past 64 bits: a product that wrapped round to a few bytes would
// pass the length check, and the tensor would promise memory the file does not have.
namespace {

std::string npy_with_shape(const std::string& shape) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + shape + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header;
}

std::string idx_of_dims(const std::vector<std::uint32_t>& dims) {
  std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (const auto d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((d >> shift) & 0xff);
  return bytes;
}

std::string safetensors_with(const std::string& header) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header;
}

template <typename Read>
std::string error_reading(const std::string& bytes, const std::string& name, Read read) {
  test_support::ScratchFolder scratch("overflowing-" + name);
  const auto path = (scratch.path / name).string();
  test_support::write_file_bytes(path, bytes);
  return test_support::usage_error([&] { read(path); });
}

}  // namespace

TEST(DamagedFiles, SizesThatOverflowAreRefused) {
  EXPECT_NE(error_reading(npy_with_shape("4294967296, 4294967296"), "square.npy", read_and_touch_npy).find("is too large"),
            std::string::npos);
  EXPECT_NE(error_reading(npy_with_shape("123456789012345678901234567890,"), "long.npy", read_and_touch_npy).find("is too large"),
            std::string::npos);
  EXPECT_NE(error_reading(idx_of_dims({65536, 65536, 65536, 65536}), "dims-idx3-ubyte", read_and_touch_idx).find("is too large"),
            std::string::npos);
  EXPECT_NE(error_reading(safetensors_with(R"({"w":{"dtype":"U8","shape":[4611686018427387904,4],"data_offsets":[0,0]}})"), "w.safetensors",
                          read_and_touch_safetensors)
                .find("is too large"),
            std::string::npos);
}

// A zip entry's size field changed to gigabytes is refused before anything is allocated for it.
TEST(DamagedFiles, AnNpzEntrysSizeMustFitItsCompressedBytes) {
  for (const char* name : {"npz/stored.npz", "npz/deflated.npz"}) {
    std::string bytes = test_support::file_bytes(format_fixture(name));
    const auto directory = bytes.find(std::string("PK\x01\x02", 4));
    ASSERT_NE(directory, std::string::npos) << name;
    bytes.replace(directory + 24, 4, std::string("\xf0\xff\xff\x7f", 4));  // the entry's uncompressed size: ~2 GiB
    const auto error = error_reading(bytes, "sized.npz", read_and_touch_npz);
    EXPECT_NE(error.find("is corrupt: its header says 2147483632 bytes from "), std::string::npos) << name << ": " << error;
  }
}

// The safetensors format has no checksum; the files gputrain writes record their data's CRC-32 in
// the metadata, so a changed weight is refused rather than loaded. Files others wrote have none
// and read as before (the fixtures above).
TEST(DamagedFiles, ASafetensorsFileGputrainWroteIsRefusedOrExactlyAsWritten) {
  test_support::ScratchFolder scratch("written-safetensors");
  const auto path = (scratch.path / "model.safetensors").string();
  const std::vector<std::pair<std::string, at::Tensor>> written{{"fc.weight", at::randn({32, 16})}, {"fc.bias", at::randn({32})}};
  write_safetensors(path, written, {{"model", "mlp"}});
  std::map<std::string, std::string> metadata;
  read_safetensors(path, &metadata);
  EXPECT_EQ(metadata.at("model"), "mlp");
  EXPECT_EQ(metadata.at(kCrc32Key).size(), 8u);

  std::string bytes = test_support::file_bytes(path);
  bytes[bytes.size() - 5] ^= 0x01;  // the last weight's lowest bits
  const auto error = error_reading(bytes, "model.safetensors", read_and_touch_safetensors);
  EXPECT_NE(error.find("is damaged: it does not match the CRC-32 gputrain recorded in its metadata"), std::string::npos) << error;

  test_support::read_damaged_copies(path, [&](const std::string& copy) {
    const auto read = read_safetensors(copy);
    bool same = read.size() == written.size();
    for (std::size_t i = 0; same && i < read.size(); ++i)
      same = read[i].first == written[i].first && at::equal(read[i].second, written[i].second);
    if (!same) {
      std::string names;
      for (const auto& [name, t] : read) names += name + " " + std::to_string(t.numel()) + "; ";
      throw std::runtime_error("read tensors other than those written: " + names);
    }
  });
}

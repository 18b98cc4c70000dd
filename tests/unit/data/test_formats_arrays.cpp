// The array formats read back from files that the reference implementations wrote (numpy, safetensors,
// Python's gzip and zipfile: tests/data/formats/make_fixtures.py), MNIST's IDX files and CIFAR-10's
// records, and every malformed file turned into a UsageError that names the file and what is wrong.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/gzip_data.hpp"
#include "data/npz_pieces.hpp"
#include "gputrain/data/idx_format.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;
using test_support::usage_error;
using test_support::usage_error_and_fix;

namespace {

at::Tensor reference() { return at::arange(60, at::kDouble).reshape({3, 4, 5}); }

}  // namespace

TEST(Npy, ReadsEveryNumericDtypeInBothByteOrdersAndBothLayouts) {
  for (const std::string code : {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"})
    for (const std::string order : {"le", "be"})
      for (const std::string layout : {"c", "f"}) {
        const auto name = "npy/" + code + "_" + order + "_" + layout + ".npy";
        const auto t = read_npy(format_fixture(name));
        ASSERT_EQ(t.sizes(), (std::vector<std::int64_t>{3, 4, 5})) << name;
        ASSERT_TRUE(t.is_contiguous()) << name;
        const auto expected = code == "b1" ? reference().remainder(2) : reference();
        const auto values = t.is_complex() ? at::real(t).to(at::kDouble) : t.to(at::kDouble);
        EXPECT_TRUE(at::equal(values, expected)) << name;
      }
}

TEST(Npy, MapsDtypesToCompactTorchTypes) {
  EXPECT_EQ(read_npy(format_fixture("npy/u1_le_c.npy")).scalar_type(), at::kByte);
  EXPECT_EQ(read_npy(format_fixture("npy/f2_le_c.npy")).scalar_type(), at::kHalf);
  EXPECT_EQ(read_npy(format_fixture("npy/u2_le_c.npy")).scalar_type(), at::kInt);  // widened: lossless
  EXPECT_EQ(read_npy(format_fixture("npy/u4_be_c.npy")).scalar_type(), at::kLong);
  EXPECT_EQ(read_npy(format_fixture("npy/c16_be_f.npy")).scalar_type(), at::kComplexDouble);
  EXPECT_EQ(read_npy(format_fixture("npy/b1_le_c.npy")).scalar_type(), at::kBool);
}

TEST(Npy, ReadsFormatVersionsOneTwoAndThree) {
  for (const std::string v : {"1", "2", "3"}) {
    const auto t = read_npy(format_fixture("npy/version" + v + ".npy"));
    EXPECT_TRUE(at::equal(t.to(at::kDouble), reference())) << "version " << v;
  }
}

TEST(Npy, MalformedFilesAreClearErrors) {
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/truncated.npy")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/not_npy.npy")); }).find("magic"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/header_cut.npy")); }).find("header"), std::string::npos);
  const auto object = usage_error([] { read_npy(format_fixture("bad/object.npy")); });
  EXPECT_NE(object.find("bad/object.npy"), std::string::npos) << object;
  EXPECT_NE(object.find("holds Python objects (dtype '|O')"), std::string::npos) << object;
  EXPECT_NE(usage_error_and_fix([] {
              read_npy(format_fixture("bad/object.npy"));
            }).find("\nsave a numeric array: numpy.asarray(values, dtype=numpy.float32)"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/structured.npy")); }).find("structured"), std::string::npos);
  const auto dates = usage_error_and_fix([] { read_npy(format_fixture("bad/dates.npy")); });
  EXPECT_NE(dates.find("holds dtype '<M8[s]', which gputrain cannot read\nsave numbers made of the dates: seconds as "
                       "x.astype('datetime64[s]').astype(numpy.float64)"),
            std::string::npos)
      << dates;
  // Hostile headers: one of 300 kB (a std::regex over it overflowed the stack), an 11-digit item size.
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/long_header.npy")); }).find("past the 10000 numpy itself reads"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/huge_itemsize.npy")); }).find("an item size no numeric dtype has"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(format_fixture("bad/many_dims.npy")); }).find("101 dimensions, past numpy's 64"), std::string::npos);
  // Class names saved as strings: named as strings, with the numpy line that makes ids of them.
  for (const std::string file : {"bad/name_labels.npy", "bad/bytes_labels.npy"}) {
    const auto names = usage_error_and_fix([&] { read_npy(format_fixture(file)); });
    EXPECT_NE(names.find("holds strings (dtype '"), std::string::npos) << names;
    EXPECT_NE(names.find("names, ids = numpy.unique(y, return_inverse=True)"), std::string::npos) << names;
  }
  EXPECT_NE(usage_error([] { read_npy(format_fixture("no/such.npy")); }).find("'" + format_fixture("no/such.npy") + "' does not exist"),
            std::string::npos);
  const auto typo = usage_error([] { read_npy(format_fixture("npy/versoin1.npy")); });
  EXPECT_NE(typo.find("does not exist; did you mean '" + format_fixture("npy/version1.npy") + "'?"), std::string::npos) << typo;
}

TEST(Npz, ReadsStoredAndDeflatedArchives) {
  const auto x = read_npy(format_fixture("npz/x.npy")), y = read_npy(format_fixture("npz/y.npy"));
  const auto stored = read_npz(format_fixture("npz/stored.npz"));
  ASSERT_EQ(stored.size(), 2U);
  EXPECT_EQ(stored[0].first, "x");
  EXPECT_TRUE(at::equal(stored[0].second, x));
  EXPECT_TRUE(at::equal(stored[1].second, y));
  const auto deflated = read_npz(format_fixture("npz/deflated.npz"));
  ASSERT_EQ(deflated.size(), 2U);
  EXPECT_EQ(deflated[0].first, "features");
  EXPECT_TRUE(at::equal(deflated[0].second, x));
  EXPECT_TRUE(at::equal(deflated[1].second, y));
}

// Members are read in pieces (1 GiB each: libzip 1.7 corrupts one read of 4 GiB or more from a
// deflated member, and the CRC check refused a sound 6 GB npz). Pieces of 7 bytes, which split the
// headers and every value, give the same arrays as one read.
TEST(Npz, MembersReadInPiecesAreTheSameArrays) {
  for (const char* name : {"npz/stored.npz", "npz/deflated.npz"}) {
    const auto whole = read_npz(format_fixture(name)), pieces = read_npz_in_pieces(format_fixture(name), 7);
    ASSERT_EQ(pieces.size(), whole.size()) << name;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(pieces[i].first, whole[i].first) << name;
      EXPECT_TRUE(at::equal(pieces[i].second, whole[i].second)) << name << ": " << whole[i].first;
    }
  }
  EXPECT_NE(usage_error([] { read_npz_in_pieces(format_fixture("bad/truncated.npz"), 7); }).find("truncated.npz"), std::string::npos);
}

TEST(Npz, MalformedArchivesAreClearErrors) {
  const auto truncated = usage_error([] { read_npz(format_fixture("bad/truncated.npz")); });
  EXPECT_NE(truncated.find("truncated.npz"), std::string::npos) << truncated;
  const auto corrupt = usage_error([] { read_npz(format_fixture("bad/corrupt.npz")); });
  EXPECT_NE(corrupt.find("corrupt.npz:features.npy"), std::string::npos) << corrupt;
}

// A member whose data does not match its CRC-32 was trained on silently; numpy refuses it.
TEST(Npz, AMemberWhoseCrcDoesNotMatchIsRefusedStoredOrDeflated) {
  for (const char* name : {"bad/stored_crc.npz", "bad/deflated_crc.npz"}) {
    const auto message = usage_error([&] { read_npz(format_fixture(name)); });
    EXPECT_NE(message.find("is corrupt: its data's CRC-32 is"), std::string::npos) << name << ": " << message;
  }
}

TEST(Safetensors, ReadsWhatThePythonPackageWrote) {
  const auto tensors = read_safetensors(format_fixture("safetensors/train.safetensors"));
  ASSERT_EQ(tensors.size(), 2U);
  for (const auto& [name, tensor] : tensors)  // the package sorts names in the header
    EXPECT_TRUE(at::equal(tensor, read_npy(format_fixture("npz/" + name + ".npy")))) << name;
}

TEST(Safetensors, MalformedFilesAreClearErrors) {
  EXPECT_NE(usage_error([] { read_safetensors(format_fixture("bad/truncated.safetensors")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_safetensors(format_fixture("bad/huge_header.safetensors")); }).find("header length"), std::string::npos);
  EXPECT_NE(usage_error([] { read_safetensors(format_fixture("bad/not_json.safetensors")); }).find("not JSON"), std::string::npos);
  // The usual mix-up: a .pt file (torch.save writes a zip) where safetensors belongs.
  EXPECT_NE(usage_error([] {
              read_safetensors(format_fixture("checkpoints/python_torch_save.pt"));
            }).find("is not a safetensors file but a zip archive: a .pt file from torch.save or a gputrain checkpoint"),
            std::string::npos);
}

namespace {

// A safetensors file as Python's package writes it: an 8-byte header length, the JSON, the bytes.
void write_raw_safetensors(const std::filesystem::path& path, const std::string& header, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header << data;
}

}  // namespace

// torch's uint16/32/64 tensors (16-bit images) are read as int32/int64, as from a .npy; a dtype
// gputrain has no use for (float8) is named with what to save instead, not called malformed.
TEST(Safetensors, UnsignedTypesAreWidenedAndUnreadableTypesNamed) {
  const test_support::ScratchFolder folder("safetensors-unsigned");
  const std::string shorts("\x01\x00\xff\xff", 4);
  write_raw_safetensors(folder.path / "u16.safetensors", R"({"x":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", shorts);
  const auto widened = read_safetensors((folder.path / "u16.safetensors").string()).at(0).second;
  EXPECT_EQ(widened.scalar_type(), at::kInt);
  EXPECT_EQ(widened[1].item<int>(), 65535);
  write_raw_safetensors(folder.path / "u64.safetensors", R"({"x":{"dtype":"U64","shape":[1],"data_offsets":[0,8]}})",
                        std::string(8, '\xff'));
  const auto huge = usage_error([&] { read_safetensors((folder.path / "u64.safetensors").string()); });
  EXPECT_NE(huge.find("u64.safetensors': tensor 'x' holds uint64 values above 2^63-1 (e.g. 18446744073709551615)"), std::string::npos)
      << huge;
  write_raw_safetensors(folder.path / "f8.safetensors", R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab");
  const auto f8 = usage_error_and_fix([&] { read_safetensors((folder.path / "f8.safetensors").string()); });
  EXPECT_NE(f8.find("f8.safetensors': tensor 'x' holds dtype F8_E4M3, which gputrain cannot read\nsave it as one of F64, F32"),
            std::string::npos)
      << f8;
  EXPECT_EQ(f8.find("not a valid safetensors file"), std::string::npos) << f8;
}

// zlib's crc32 of an empty tensor's null pointer is its initial value: the CRC-32 recorded for a
// file holding an empty tensor dropped everything before it, and gputrain called its own file damaged.
TEST(Safetensors, AFileHoldingAnEmptyTensorReadsBackUndamaged) {
  const test_support::ScratchFolder folder("safetensors-empty");
  const auto path = (folder.path / "e.safetensors").string();
  write_safetensors(path, {{"a", at::arange(6, at::kFloat)}, {"empty", at::zeros({4, 0})}, {"b", at::ones({2, 2})}});
  const auto read = read_safetensors(path);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read.at(1).second.sizes(), (std::vector<std::int64_t>{4, 0}));
  EXPECT_TRUE(at::equal(read.at(0).second, at::arange(6, at::kFloat)));
}

TEST(Idx, ReadsMnistPlainAndGzipped) {
  const auto train = read_mnist(format_fixture("mnist"), "train");
  EXPECT_EQ(train.inputs.sizes(), (std::vector<std::int64_t>{5, 1, 28, 28}));
  EXPECT_EQ(train.inputs.scalar_type(), at::kByte);
  EXPECT_EQ(train.inputs.flatten()[300].item<int>(), 300 % 251);
  EXPECT_TRUE(at::equal(train.targets, at::tensor({3, 1, 4, 1, 5}, at::kLong)));
  const auto test = read_mnist(format_fixture("mnist"), "t10k");
  EXPECT_EQ(test.size(), 2);
  EXPECT_TRUE(at::equal(test.inputs, train.inputs.slice(0, 0, 2)));
}

// The gzip reader under both: zeros after the last member are padding, anything else after it and
// a corrupt byte inside are errors naming the file and the byte.
TEST(Gzip, PaddingIsSkippedAndCorruptOrTrailingBytesAreNamed) {
  std::ifstream in(format_fixture("csv/numeric.csv.gz"), std::ios::binary);
  const std::string packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream plain_in(format_fixture("csv/numeric.csv"), std::ios::binary);
  const std::string plain((std::istreambuf_iterator<char>(plain_in)), std::istreambuf_iterator<char>());
  const auto inflate = [](const std::string& bytes) {
    return inflate_gzip(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "x.gz");
  };
  ASSERT_TRUE(is_gzip(reinterpret_cast<const unsigned char*>(packed.data()), packed.size()));
  EXPECT_FALSE(is_gzip(reinterpret_cast<const unsigned char*>(plain.data()), plain.size()));
  EXPECT_EQ(inflate(packed), plain);
  EXPECT_EQ(inflate(packed + std::string(512, '\0')), plain);
  EXPECT_NE(usage_error([&] {
              inflate(packed + "junk");
            }).find("'x.gz' is not a valid gzip file: bytes that are not gzip follow its end at byte " + std::to_string(packed.size())),
            std::string::npos);
  auto corrupt = packed;
  for (std::size_t i = 12; i < corrupt.size() - 8; ++i) corrupt[i] = static_cast<char>(0xFF);  // past the header, before the trailer
  EXPECT_NE(usage_error([&] { inflate(corrupt); }).find("'x.gz' is not a valid gzip file: "), std::string::npos);
}

TEST(Idx, ReadsBigEndianWiderTypes) {
  EXPECT_TRUE(at::equal(read_idx(format_fixture("idx/floats.idx")), at::arange(6, at::kFloat).view({2, 3})));
  EXPECT_TRUE(at::equal(read_idx(format_fixture("idx/shorts.idx")), at::tensor({-2, 300, 7}, at::kShort)));
  EXPECT_NE(usage_error([] { read_idx(format_fixture("bad/truncated-images-idx3-ubyte")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_idx(format_fixture("npy/f4_le_c.npy")); }).find("magic"), std::string::npos);
}

TEST(Cifar10, ReadsRecordsAcrossBatches) {
  const auto set = read_cifar10(cifar10_files(format_fixture("cifar"), true));
  ASSERT_EQ(set.size(), 7);
  const auto p1 = read_npy(format_fixture("cifar/data_batch_1.bin.pixels.npy")),
             p2 = read_npy(format_fixture("cifar/data_batch_2.bin.pixels.npy"));
  EXPECT_TRUE(at::equal(set.inputs, at::cat({p1, p2})));
  EXPECT_TRUE(at::equal(set.targets, at::cat({read_npy(format_fixture("cifar/data_batch_1.bin.labels.npy")),
                                              read_npy(format_fixture("cifar/data_batch_2.bin.labels.npy"))})));
  const auto bad = usage_error([] { read_cifar10(cifar10_files(format_fixture("bad/cifar"), true)); });
  EXPECT_NE(bad.find("3073-byte records"), std::string::npos) << bad;
  // The download given before it was unpacked: the fix is the tar line.
  const auto archive = (std::filesystem::temp_directory_path() / "cifar-10-binary.tar.gz").string();
  std::ofstream(archive) << "not unpacked";
  const auto packed = usage_error_and_fix([&] { cifar10_files(archive, true); });
  EXPECT_NE(packed.find("'" + archive + "' is not a folder but an archive\nunpack it (tar xf " + archive +
                        "), then point data.path at the folder"),
            std::string::npos)
      << packed;
  std::filesystem::remove(archive);
}

// Zip archives named .npy: an .npz renamed, or a torch.save file. Each is named for what it is,
// with the setting or the numpy line that fits, not "does not start with the .npy magic bytes".
TEST(Npy, AnNpzOrATorchSaveFileNamedNpyIsNamedSo) {
  test_support::ScratchFolder scratch("zip-named-npy");
  const auto as_npy = [&](const std::string& fixture, const std::string& name) {
    const auto path = (scratch.path / name).string();
    std::filesystem::copy_file(format_fixture(fixture), path);
    return test_support::usage_error_and_fix([&] { read_npy(path); });
  };
  const auto npz = as_npy("npz/stored.npz", "arrays.npy");
  EXPECT_NE(npz.find("arrays.npy' is an .npz archive (numpy.savez writes one), not a .npy array\nset data.source: npz"), std::string::npos)
      << npz;
  const auto torch_save = as_npy("checkpoints/python_torch_save.pt", "tensor.npy");
  EXPECT_NE(
      torch_save.find("tensor.npy' is a torch.save file, not a .npy array\nsave the tensor with numpy: numpy.save('x.npy', t.numpy())"),
      std::string::npos)
      << torch_save;
}

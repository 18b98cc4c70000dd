// Every format read back from files that the reference implementations wrote (numpy, safetensors,
// Pillow, Python's gzip, bz2, lzma, zipfile and csv: tests/data/formats/make_fixtures.py), and every malformed file
// turned into a UsageError that names the file and what is wrong.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "data/gzip_data.hpp"
#include "data/image_decode.hpp"
#include "data/npz_pieces.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/data/batch.hpp"
#include "gputrain/data/csv_format.hpp"
#include "gputrain/data/csv_parts.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/idx_format.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/sample_stats.hpp"
#include "gputrain/data/sources.hpp"
#include "support/damaged_copies.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::usage_error;
using test_support::usage_error_and_fix;

namespace {

std::string fixture(const std::string& name) { return std::string(gputrain::test_support::format_fixtures_dir()) + "/" + name; }

at::Tensor reference() { return at::arange(60, at::kDouble).reshape({3, 4, 5}); }

}  // namespace

TEST(Npy, ReadsEveryNumericDtypeInBothByteOrdersAndBothLayouts) {
  for (const std::string code : {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"})
    for (const std::string order : {"le", "be"})
      for (const std::string layout : {"c", "f"}) {
        const auto name = "npy/" + code + "_" + order + "_" + layout + ".npy";
        const auto t = read_npy(fixture(name));
        ASSERT_EQ(t.sizes(), (std::vector<std::int64_t>{3, 4, 5})) << name;
        ASSERT_TRUE(t.is_contiguous()) << name;
        const auto expected = code == "b1" ? reference().remainder(2) : reference();
        const auto values = t.is_complex() ? at::real(t).to(at::kDouble) : t.to(at::kDouble);
        EXPECT_TRUE(at::equal(values, expected)) << name;
      }
}

TEST(Npy, MapsDtypesToCompactTorchTypes) {
  EXPECT_EQ(read_npy(fixture("npy/u1_le_c.npy")).scalar_type(), at::kByte);
  EXPECT_EQ(read_npy(fixture("npy/f2_le_c.npy")).scalar_type(), at::kHalf);
  EXPECT_EQ(read_npy(fixture("npy/u2_le_c.npy")).scalar_type(), at::kInt);  // widened: lossless
  EXPECT_EQ(read_npy(fixture("npy/u4_be_c.npy")).scalar_type(), at::kLong);
  EXPECT_EQ(read_npy(fixture("npy/c16_be_f.npy")).scalar_type(), at::kComplexDouble);
  EXPECT_EQ(read_npy(fixture("npy/b1_le_c.npy")).scalar_type(), at::kBool);
}

TEST(Npy, ReadsFormatVersionsOneTwoAndThree) {
  for (const std::string v : {"1", "2", "3"}) {
    const auto t = read_npy(fixture("npy/version" + v + ".npy"));
    EXPECT_TRUE(at::equal(t.to(at::kDouble), reference())) << "version " << v;
  }
}

TEST(Npy, MalformedFilesAreClearErrors) {
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/truncated.npy")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/not_npy.npy")); }).find("magic"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/header_cut.npy")); }).find("header"), std::string::npos);
  const auto object = usage_error([] { read_npy(fixture("bad/object.npy")); });
  EXPECT_NE(object.find("bad/object.npy"), std::string::npos) << object;
  EXPECT_NE(object.find("holds Python objects (dtype '|O')"), std::string::npos) << object;
  EXPECT_NE(usage_error_and_fix([] {
              read_npy(fixture("bad/object.npy"));
            }).find("\nsave a numeric array: numpy.asarray(values, dtype=numpy.float32)"),
            std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/structured.npy")); }).find("structured"), std::string::npos);
  const auto dates = usage_error_and_fix([] { read_npy(fixture("bad/dates.npy")); });
  EXPECT_NE(dates.find("holds dtype '<M8[s]', which gputrain cannot read\nsave numbers made of the dates: seconds as "
                       "x.astype('datetime64[s]').astype(numpy.float64)"),
            std::string::npos)
      << dates;
  // Hostile headers: one of 300 kB (a std::regex over it overflowed the stack), an 11-digit item size.
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/long_header.npy")); }).find("past the 10000 numpy itself reads"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/huge_itemsize.npy")); }).find("an item size no numeric dtype has"), std::string::npos);
  EXPECT_NE(usage_error([] { read_npy(fixture("bad/many_dims.npy")); }).find("101 dimensions, past numpy's 64"), std::string::npos);
  // Class names saved as strings: named as strings, with the numpy line that makes ids of them.
  for (const std::string file : {"bad/name_labels.npy", "bad/bytes_labels.npy"}) {
    const auto names = usage_error_and_fix([&] { read_npy(fixture(file)); });
    EXPECT_NE(names.find("holds strings (dtype '"), std::string::npos) << names;
    EXPECT_NE(names.find("names, ids = numpy.unique(y, return_inverse=True)"), std::string::npos) << names;
  }
  EXPECT_NE(usage_error([] { read_npy(fixture("no/such.npy")); }).find("'" + fixture("no/such.npy") + "' does not exist"),
            std::string::npos);
  const auto typo = usage_error([] { read_npy(fixture("npy/versoin1.npy")); });
  EXPECT_NE(typo.find("does not exist; did you mean '" + fixture("npy/version1.npy") + "'?"), std::string::npos) << typo;
}

TEST(Npz, ReadsStoredAndDeflatedArchives) {
  const auto x = read_npy(fixture("npz/x.npy")), y = read_npy(fixture("npz/y.npy"));
  const auto stored = read_npz(fixture("npz/stored.npz"));
  ASSERT_EQ(stored.size(), 2U);
  EXPECT_EQ(stored[0].first, "x");
  EXPECT_TRUE(at::equal(stored[0].second, x));
  EXPECT_TRUE(at::equal(stored[1].second, y));
  const auto deflated = read_npz(fixture("npz/deflated.npz"));
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
    const auto whole = read_npz(fixture(name)), pieces = read_npz_in_pieces(fixture(name), 7);
    ASSERT_EQ(pieces.size(), whole.size()) << name;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(pieces[i].first, whole[i].first) << name;
      EXPECT_TRUE(at::equal(pieces[i].second, whole[i].second)) << name << ": " << whole[i].first;
    }
  }
  EXPECT_NE(usage_error([] { read_npz_in_pieces(fixture("bad/truncated.npz"), 7); }).find("truncated.npz"), std::string::npos);
}

TEST(Npz, MalformedArchivesAreClearErrors) {
  const auto truncated = usage_error([] { read_npz(fixture("bad/truncated.npz")); });
  EXPECT_NE(truncated.find("truncated.npz"), std::string::npos) << truncated;
  const auto corrupt = usage_error([] { read_npz(fixture("bad/corrupt.npz")); });
  EXPECT_NE(corrupt.find("corrupt.npz:features.npy"), std::string::npos) << corrupt;
}

// A member whose data does not match its CRC-32 was trained on silently; numpy refuses it.
TEST(Npz, AMemberWhoseCrcDoesNotMatchIsRefusedStoredOrDeflated) {
  for (const char* name : {"bad/stored_crc.npz", "bad/deflated_crc.npz"}) {
    const auto message = usage_error([&] { read_npz(fixture(name)); });
    EXPECT_NE(message.find("is corrupt: its data's CRC-32 is"), std::string::npos) << name << ": " << message;
  }
}

TEST(Safetensors, ReadsWhatThePythonPackageWrote) {
  const auto tensors = read_safetensors(fixture("safetensors/train.safetensors"));
  ASSERT_EQ(tensors.size(), 2U);
  for (const auto& [name, tensor] : tensors)  // the package sorts names in the header
    EXPECT_TRUE(at::equal(tensor, read_npy(fixture("npz/" + name + ".npy")))) << name;
}

TEST(Safetensors, MalformedFilesAreClearErrors) {
  EXPECT_NE(usage_error([] { read_safetensors(fixture("bad/truncated.safetensors")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_safetensors(fixture("bad/huge_header.safetensors")); }).find("header length"), std::string::npos);
  EXPECT_NE(usage_error([] { read_safetensors(fixture("bad/not_json.safetensors")); }).find("not JSON"), std::string::npos);
  // The usual mix-up: a .pt file (torch.save writes a zip) where safetensors belongs.
  EXPECT_NE(usage_error([] {
              read_safetensors(fixture("checkpoints/python_torch_save.pt"));
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

// numpy bool arrays are what a mask or a yes/no label is saved as: features of 0 and 1 (as a CSV's
// True/False column), and labels of classes 0 (False) and 1 (True).
TEST(Sources, BoolFeaturesAreZeroAndOneAndBoolLabelsTwoClasses) {
  const test_support::ScratchFolder folder("bool-arrays");
  const auto x = at::arange(24).reshape({8, 3}).remainder(2).to(at::kBool);
  const auto y = at::arange(8).remainder(3).eq(0);
  write_safetensors((folder.path / "d.safetensors").string(), {{"x", x}, {"y", y}});
  SourceSpec spec;
  spec.source = "safetensors";
  spec.path = (folder.path / "d.safetensors").string();
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.classes, 2);
  const auto set = materialize(*sources.train, 1).set;
  EXPECT_TRUE(at::equal(set.inputs, x.to(at::kFloat)));
  EXPECT_TRUE(at::equal(set.targets, y.to(at::kLong)));
}

// Samples of no values (features shaped [N, 0]) made a model of no inputs, which divided by zero
// (SIGFPE) in the first statistics; they are refused as data, as are empty regression targets.
TEST(Sources, SamplesOrTargetsOfNoValuesAreRefused) {
  const test_support::ScratchFolder folder("empty-samples");
  const auto y = at::arange(8).remainder(2);
  write_safetensors((folder.path / "empty.safetensors").string(), {{"x", at::zeros({8, 3, 0})}, {"y", y}});
  SourceSpec spec;
  spec.source = "safetensors";
  spec.path = (folder.path / "empty.safetensors").string();
  const auto inputs = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(inputs.find("empty.safetensors (8 samples): its samples hold no values (each is shaped [3, 0])\nsave samples of at least one "
                        "value"),
            std::string::npos)
      << inputs;
  write_safetensors((folder.path / "no-targets.safetensors").string(), {{"x", at::ones({8, 2})}, {"y", at::zeros({8, 0})}});
  spec.path = (folder.path / "no-targets.safetensors").string();
  spec.task = "regression";
  const auto targets = usage_error([&] { open_sources(spec); });
  EXPECT_NE(targets.find("its targets (data.labels) hold no values (each is shaped [0])"), std::string::npos) << targets;
}

// Class names read as regression targets: the other task is the likely fix.
TEST(Csv, TextLabelsForRegressionPointAtClassification) {
  const auto message = usage_error_and_fix([] {
    read_csv(fixture("csv/iris.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, false});
  });
  EXPECT_NE(message.find("iris.csv:2: column 'species': 'setosa' is not a number"), std::string::npos) << message;
  EXPECT_NE(
      message.find(
          "\nregression labels must be numbers; to predict 'species' as classes (its values as names), set data.task: classification"),
      std::string::npos)
      << message;
}

TEST(Csv, SelectsColumnsAndMapsClassNames) {
  std::vector<std::string> names;
  const auto set = read_csv(fixture("csv/iris.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, true}, &names);
  EXPECT_EQ(names, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1, 2, 0}, at::kLong)));
  EXPECT_TRUE(at::allclose(set.inputs, at::tensor({5.1f, 3.5f, 7.0f, 3.2f, 6.3f, 3.3f, 4.9f, 3.0f}).view({4, 2})));
  // A validation file takes the training file's ids; a name it lacks is named where it is.
  const auto unknown = usage_error_and_fix([&] {
    read_csv(fixture("csv/iris_val_unknown_class.csv"), CsvSpec{{"sepal_length", "sepal_width"}, {"species"}, true}, &names);
  });
  EXPECT_NE(unknown.find("iris_val_unknown_class.csv:3: label 'virginca' is not a class of the training file; did you mean 'virginica'?"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("the model learns the training file's classes only ('setosa', 'versicolor', 'virginica')"), std::string::npos)
      << unknown;
}

// What spreadsheets export: the byte-order mark of "CSV UTF-8" is not part of the first column's
// name; "Unicode text" (UTF-16) is refused with the export to use instead.
TEST(Csv, ReadsASpreadsheetsUtf8ExportAndRefusesUtf16) {
  CsvColumns columns;
  const auto set = read_csv(fixture("csv/excel_utf8_bom.csv"), CsvSpec{{"a", "b"}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({2, 2})));
  const auto error = usage_error([] { read_csv(fixture("csv/excel_utf16.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find("is UTF-16 text (as a spreadsheet's \"Unicode text\" export writes), not UTF-8"), std::string::npos) << error;
}

// A gzip'd CSV (pandas' to_csv("x.csv.gz"), or two gzip members end to end) reads as the plain
// file does; the inflating says how far it is under the file's name.
TEST(Csv, GzippedFilesReadAsThePlainFileDoes) {
  const CsvSpec spec{{}, {"label"}, true};
  const auto plain = read_csv(fixture("csv/numeric.csv"), spec);
  std::vector<std::string> reported;
  for (const char* name : {"csv/numeric.csv.gz", "csv/numeric_two_members.csv.gz"}) {
    const auto packed = read_csv(fixture(name), spec, nullptr, nullptr,
                                 [&](const std::string& what, std::uint64_t, std::uint64_t) { reported.push_back(what); });
    EXPECT_TRUE(at::equal(packed.inputs, plain.inputs)) << name;
    EXPECT_TRUE(at::equal(packed.targets, plain.targets)) << name;
  }
  EXPECT_NE(std::find(reported.begin(), reported.end(), fixture("csv/numeric.csv.gz") + ", inflating"), reported.end());
  EXPECT_NE(std::find(reported.begin(), reported.end(), fixture("csv/numeric.csv.gz")), reported.end()) << "then the parse";
}

// A bool column is a 0/1 feature, whoever wrote it.
TEST(Csv, BooleanColumnsAreReadAsOneAndZero) {
  const auto set = read_csv(fixture("csv/booleans.csv"), CsvSpec{{}, {"label"}, true});
  ASSERT_EQ(set.inputs.sizes(), (std::vector<std::int64_t>{6, 3}));
  EXPECT_TRUE(at::equal(set.inputs.select(1, 1), at::tensor({0.f, 1.f, 0.f, 1.f, 0.f, 1.f})));
  EXPECT_TRUE(at::equal(set.inputs.select(1, 2), at::tensor({1.f, 0.f, 0.f, 1.f, 0.f, 0.f})));
}

// Files that are not CSV text are named for what they are, with the command that makes text of them.
TEST(Csv, CompressedAndBinaryFilesAreRefusedWithTheWayToText) {
  const auto refusal = [](const std::string& name) -> std::pair<std::string, std::string> {
    try {
      read_csv(fixture(name), CsvSpec{{}, {"label"}, true});
      ADD_FAILURE() << "read " << name << " as a CSV";
    } catch (const UsageError& e) {
      return {e.what(), e.remedy()};
    }
    return {};
  };
  const auto cut = refusal("bad/numeric_cut.csv.gz");
  EXPECT_NE(cut.first.find("numeric_cut.csv.gz' is not a valid gzip file: it is cut short"), std::string::npos) << cut.first;
  EXPECT_NE(cut.second.find("gzip -t "), std::string::npos) << cut.second;
  const auto bzip2 = refusal("bad/numeric.csv.bz2");
  EXPECT_NE(bzip2.first.find("numeric.csv.bz2' is bzip2-compressed"), std::string::npos) << bzip2.first;
  EXPECT_EQ(bzip2.second, "decompress it first: bunzip2 -k " + fixture("bad/numeric.csv.bz2"));
  EXPECT_NE(refusal("bad/numeric.csv.xz").second.find("xz -dk "), std::string::npos);
  EXPECT_NE(refusal("bad/numeric.zip").first.find("is a zip archive (an Excel .xlsx workbook is one too)"), std::string::npos);
  const auto array = refusal("bad/array_named.csv");
  EXPECT_NE(array.first.find("array_named.csv' is binary data, not text: its first line has a zero byte"), std::string::npos)
      << array.first;
}

// The run's data line names the columns the model reads: an id or a second target left among the
// features shows there.
TEST(Csv, TheDataLineNamesTheFeatureAndLabelColumns) {
  CsvColumns columns;
  read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(columns.unnamed.empty());
  SourceSpec spec;
  spec.source = "csv";
  spec.path = fixture("csv/numeric.csv");
  spec.labels = {"b"};
  spec.task = "regression";
  const auto description = open_sources(spec).train->description();
  EXPECT_NE(description.find("(10 samples; features a, label; label b)"), std::string::npos) << description;
  spec.features = {"a"};
  EXPECT_NE(open_sources(spec).train->description().find("(10 samples; feature a; label b)"), std::string::npos);

  // A wide file: the first six names and the count.
  const auto wide = std::filesystem::temp_directory_path() / "gputrain-wide.csv";
  {
    std::ofstream out(wide);
    for (int c = 0; c < 12; ++c) out << "c" << c << ",";
    out << "y\n";
    for (int c = 0; c < 12; ++c) out << c << ",";
    out << "1\n";
  }
  spec.path = wide.string();
  spec.labels = {"y"};
  spec.features = {};
  const auto wide_text = open_sources(spec).train->description();
  EXPECT_NE(wide_text.find("(1 sample; features c0, c1, c2, c3, c4, c5, ... (12 columns); label y)"), std::string::npos) << wide_text;
}

// A header cell with no name is pandas' index or a trailing delimiter's empty column: left out of
// the default features, and the data line says so.
TEST(Csv, UnnamedColumnsAreLeftOutOfTheFeaturesAndSaidSo) {
  CsvColumns columns;
  const auto indexed = read_csv(fixture("csv/pandas_index.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(columns.unnamed, std::vector<std::size_t>{1});
  EXPECT_TRUE(at::equal(indexed.inputs.select(0, 3), at::tensor({13.0f, 23.0f})));
  read_csv(fixture("csv/trailing_delimiter.csv"), CsvSpec{{}, {"label"}, true}, nullptr, &columns);
  EXPECT_EQ(columns.unnamed, std::vector<std::size_t>{4});
  SourceSpec spec;
  spec.source = "csv";
  spec.path = fixture("csv/pandas_index.csv");
  spec.labels = {"label"};
  const auto description = open_sources(spec).train->description();
  EXPECT_NE(description.find("(4 samples; features a, b; label label; unnamed column 1 left out)"), std::string::npos) << description;
}

// The validation file's features are the training file's, found by name: another column order
// must not hand the model b where it learned a.
TEST(Csv, ValidationColumnsAreMatchedByName) {
  SourceSpec spec;
  spec.source = "csv";
  spec.path = fixture("csv/pandas_index.csv");
  spec.val_path = fixture("csv/val_reordered.csv");
  spec.labels = {"label"};
  const auto sources = open_sources(spec);
  ASSERT_TRUE(sources.val);
  const auto val = sources.val->tensors();
  ASSERT_TRUE(val.has_value());
  EXPECT_TRUE(at::equal(val->inputs.select(0, 2), at::tensor({12.0f, 22.0f}))) << val->inputs;
}

// Several targets (x and y of a position, say) are several label columns: one target each.
TEST(Csv, RegressionTakesEachLabelColumnAsATarget) {
  const auto set = read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "label"}, false});
  ASSERT_EQ(set.inputs.sizes(), (std::vector<std::int64_t>{10, 1})) << "a alone is left as a feature";
  ASSERT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 2}));
  const auto i = at::arange(10, at::kFloat);
  EXPECT_TRUE(at::equal(set.inputs.squeeze(1), i));
  EXPECT_TRUE(at::equal(set.targets, at::stack({i * 0.5, i.remainder(2)}, 1)));

  const auto classes = usage_error([] { read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "label"}, true}); });
  EXPECT_NE(classes.find("data.labels names 2 columns (b, label), but a classification has one label column"), std::string::npos)
      << classes;

  const auto twice = usage_error([] { read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"b", "b"}, false}); });
  EXPECT_NE(twice.find("data.labels names column 'b' twice"), std::string::npos) << twice;
  const auto leak = usage_error([] { read_csv(fixture("csv/numeric.csv"), CsvSpec{{"a", "label"}, {"label"}, true}); });
  EXPECT_NE(leak.find("column 'label' of '" + fixture("csv/numeric.csv") + "' is in data.features and data.labels"), std::string::npos)
      << leak;
  const auto feature_twice = usage_error([] { read_csv(fixture("csv/numeric.csv"), CsvSpec{{"a", "a"}, {"label"}, true}); });
  EXPECT_NE(feature_twice.find("data.features names column 'a' twice"), std::string::npos) << feature_twice;

  SourceSpec npy;
  npy.source = "npy";
  npy.path = fixture("npz/x.npy");
  npy.labels = {fixture("npz/y.npy"), fixture("npz/y.npy")};
  const auto arrays = usage_error([&] { open_sources(npy); });
  EXPECT_NE(arrays.find("but data.source npy takes one"), std::string::npos) << arrays;
}

// A decimal comma or thousands separators are numbers for people: the error says which, with the
// pandas line that converts the file, rather than calling the column text.
// numpy.savetxt writes no header: its first row was listed as "the header row names: 0, 0, 0".
TEST(Csv, AFileWithoutAHeaderRowIsNamedAsSuch) {
  const test_support::ScratchFolder folder("csv-headerless");
  std::ofstream(folder.path / "rows.csv") << "0.5,1,0\n2,3,1\n";
  const auto message = usage_error_and_fix([&] { read_csv((folder.path / "rows.csv").string(), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(message.find("rows.csv' has no column 'label' (data.labels): its first row (0.5, 1, 0) holds numbers, not column names, so "
                         "the file has no header row\nadd a header row naming the columns, 'label' among them"),
            std::string::npos)
      << message;
  std::ofstream(folder.path / "named.csv") << "a,b,c\n2,3,1\n";  // a header without the column: its names, as before
  const auto named = usage_error_and_fix([&] { read_csv((folder.path / "named.csv").string(), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(named.find("\nthe header row names: a, b, c"), std::string::npos) << named;
}

TEST(Csv, NumbersWrittenForPeopleAreNamedWithTheConversion) {
  const auto comma = usage_error_and_fix([] { read_csv(fixture("bad/decimal_comma.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(comma.find("decimal_comma.csv:2: column 'a' (1): '3,5' is not a number: it has a decimal comma"), std::string::npos) << comma;
  EXPECT_NE(comma.find("pd.read_csv('" + fixture("bad/decimal_comma.csv") + "', sep=';', decimal=','); df.to_csv('" +
                       fixture("bad/decimal_comma-converted.csv") + "', index=False)"),
            std::string::npos)
      << comma;
  EXPECT_EQ(comma.find("holds text"), std::string::npos) << comma;
  const auto thousands = usage_error_and_fix([] { read_csv(fixture("bad/thousands.csv"), CsvSpec{{}, {"price"}, false}); });
  EXPECT_NE(thousands.find("thousands.csv:2: column 'price': '1,234.5' is not a number: it has thousands separators"), std::string::npos)
      << thousands;
  EXPECT_NE(thousands.find("pd.read_csv('" + fixture("bad/thousands.csv") + "', thousands=',')"), std::string::npos) << thousands;
}

TEST(Csv, BadCellsNameTheLineAndColumn) {
  const auto bad = usage_error([] { read_csv(fixture("bad/bad_cell.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(bad.find("bad_cell.csv:3: column 'b' (2): 'oops' is not a number"), std::string::npos) << bad;
  // All-but-label includes the text column: from its first row on, so the fix is to one-hot encode
  // its categories or leave it out, in the key the user chose: data.exclude when they did not list
  // the features.
  const auto text_column_fix = [](CsvSpec spec) -> std::string {
    try {
      read_csv(fixture("csv/iris.csv"), spec);
      ADD_FAILURE() << "read a text column as features";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("iris.csv:2: column 'note' (3): 'a, b' is not a number"), std::string::npos) << e.what();
      return e.remedy();
    }
    return "";
  };
  EXPECT_EQ(text_column_fix(CsvSpec{{}, {"species"}, true}),
            "column 'note' holds text: one-hot encode it with data.categorical: [note], or leave it out with data.exclude: [note]");
  CsvSpec excluding{{}, {"species"}, true};
  excluding.exclude = {"sepal_width"};
  EXPECT_NE(text_column_fix(excluding).find("leave it out with data.exclude: [sepal_width, note]"), std::string::npos);
  EXPECT_NE(text_column_fix(CsvSpec{{"sepal_length", "note", "sepal_width"}, {"species"}, true})
                .find("leave it out with data.features: [sepal_length, sepal_width]"),
            std::string::npos);
  EXPECT_NE(text_column_fix(CsvSpec{{"note"}, {"species"}, true}).find("[note], or leave it out"), std::string::npos);
  // Every text column of the first row is named at once, so that one edit fixes them all: a
  // category column is one-hot encoded, a date column is named as one, with a way to make numbers of it.
  try {
    read_csv(fixture("bad/text_columns.csv"), CsvSpec{{}, {"load"}, false});
    ADD_FAILURE() << "read text columns as features";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("text_columns.csv:2: column 'when' (2): '2024-01-01 00:00:00' is not a number"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.remedy(),
              "columns 'when', 'city' hold text: one-hot encode 'city' with data.categorical: [city]; leave 'when' out with "
              "data.exclude: [when], or turn the dates in 'when' into numbers first, e.g. their hour or day of the year: pandas' "
              "pd.to_datetime(df['when']).dt.dayofyear");
  }
  try {  // a bad cell further down is a bad row
    read_csv(fixture("bad/bad_cell.csv"), CsvSpec{{}, {"label"}, true});
  } catch (const UsageError& e) {
    EXPECT_EQ(e.remedy(), "fix or remove that row; feature cells must be numbers");
  }
  try {
    read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {}, true});
    ADD_FAILURE() << "read a CSV without a label column";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "data.labels is not set for the CSV source");
    EXPECT_EQ(e.remedy(),
              "set data.labels: label (the column named like a label); '" + fixture("csv/numeric.csv") + "' has the columns a, b, label");
  }
  try {  // no column named like a label: the columns alone
    read_csv(fixture("csv/iris.csv"), CsvSpec{{}, {}, true});
    ADD_FAILURE() << "read a CSV without a label column";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.remedy().rfind("set data.labels to the label column's name; '", 0), 0u) << e.remedy();
  }
  const auto missing = usage_error([] { read_csv(fixture("csv/iris.csv"), CsvSpec{{}, {"specie"}, true}); });
  EXPECT_NE(missing.find("did you mean 'species'"), std::string::npos) << missing;
  // "b,label" is one name to YAML: the fix shows the list it meant.
  try {
    read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"b,label"}, false});
    ADD_FAILURE() << "read a column named 'b,label'";
  } catch (const UsageError& e) {
    EXPECT_NE(e.remedy().find("several columns are a YAML list: data.labels: [b, label] (with --set, quote it: --set 'data.labels=[b, "
                              "label]'; on gputrain profile's command line: --labels b label)"),
              std::string::npos)
        << e.remedy();
  }
}

// A NaN (how pandas writes a missing value) or a number beyond float32 is named where it is, instead
// of surfacing as a diverged loss whose advice is to lower the learning rate.
TEST(Csv, NonFiniteCellsNameTheLineAndColumn) {
  // 'nan', as Python's csv writes a NaN, is pandas' mark of a missing value: named as one.
  const auto nan = usage_error([] { read_csv(fixture("bad/not_finite.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(nan.find("not_finite.csv:3: column 'b' (2): 'nan' marks a missing value; 1 of its 3 rows misses a value ('b' 1)"),
            std::string::npos)
      << nan;
  const auto huge = usage_error([] { read_csv(fixture("bad/not_finite.csv"), CsvSpec{{"a"}, {"label"}, true}); });
  EXPECT_NE(huge.find("not_finite.csv:4: column 'a' (1): '1e+39' is not a finite float32 number"), std::string::npos) << huge;
  const auto label = usage_error([] { read_csv(fixture("bad/not_finite.csv"), CsvSpec{{"label"}, {"b"}, false}); });
  EXPECT_NE(label.find("not_finite.csv:3: the label (column 'b'): 'nan' marks a missing value"), std::string::npos) << label;
  const auto infinite = usage_error([] { read_csv(fixture("bad/not_finite.csv"), CsvSpec{{"label"}, {"a"}, false}); });
  EXPECT_NE(infinite.find("not_finite.csv:4: label '1e+39' is not a finite float32 number"), std::string::npos) << infinite;
}

TEST(Csv, EmptyCellsAreCalledMissingValues) {
  const auto feature = usage_error([] { read_csv(fixture("bad/empty_cells.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(feature.find("empty_cells.csv:2: column 'b' (2) is empty: a missing value"), std::string::npos) << feature;
  const auto label = usage_error([] { read_csv(fixture("bad/empty_cells.csv"), CsvSpec{{"a"}, {"label"}, true}); });
  EXPECT_NE(label.find("empty_cells.csv:3: the label (column 'label') is empty: a missing value"), std::string::npos) << label;
  try {  // every row misses a value: dropping rows leaves nothing, so that is not offered
    read_csv(fixture("bad/empty_cells.csv"), CsvSpec{{}, {"label"}, true});
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2 of its 2 rows miss a value ('b' 1, 'label' 1)"), std::string::npos) << e.what();
    EXPECT_EQ(e.remedy(), "missing values are not filled in for you, and every row misses one: fill them in");
  }
}

// The first missing value is named where it is, with how many the file has and in which columns,
// and the pandas line that drops those rows (missing in the columns gputrain reads: a column left
// out may miss what it likes), so that fixing them is not a run per row.
TEST(Csv, MissingValuesAreCountedWithThePandasLineThatDropsThoseRows) {
  const auto path = fixture("bad/missing_values.csv");
  const auto error_of = [](CsvSpec spec) -> std::pair<std::string, std::string> {
    try {
      read_csv(fixture("bad/missing_values.csv"), spec);
      ADD_FAILURE() << "read missing values";
    } catch (const UsageError& e) {
      return {e.what(), e.remedy()};
    }
    return {};
  };
  const auto complete = path.substr(0, path.size() - 4) + "-complete.csv";
  const auto [what, fix] = error_of(CsvSpec{{}, {"label"}, true});
  EXPECT_EQ(what, path + ":4: column 'b' (2) is empty: a missing value; 3 of its 10 rows miss a value ('b' 2, 'c' 1)");
  EXPECT_EQ(fix,
            "missing values are not filled in for you: fill them in, or drop those rows with python3 -c \"import pandas as pd; df = "
            "pd.read_csv('" +
                path + "'); df.dropna().to_csv('" + complete + "', index=False)\" and use " + complete +
                " (data.missing: drop does so as it reads), or have gputrain fill them: data.missing: mean (or zero), or leave the "
                "columns out with data.exclude: [b, c]");
  // R's NA is a missing value too, wherever it is the first.
  EXPECT_NE(error_of(CsvSpec{{"c"}, {"label"}, true})
                .first.find(":9: column 'c' (3): 'NA' marks a missing value; 1 of its 10 rows misses a value ('c' 1)"),
            std::string::npos);
  // Columns left out do not count, and the pandas line leaves their missing values alone.
  CsvSpec excluding{{}, {"label"}, true};
  excluding.exclude = {"c"};
  const auto [excluded_what, excluded_fix] = error_of(excluding);
  EXPECT_NE(excluded_what.find("2 of its 10 rows miss a value ('b' 2)"), std::string::npos) << excluded_what;
  EXPECT_NE(excluded_fix.find("df.dropna(subset=df.columns.difference(['c']))"), std::string::npos) << excluded_fix;
  EXPECT_NE(excluded_fix.find("leave the column out with data.exclude: [c, b]"), std::string::npos) << excluded_fix;
  const auto listed = error_of(CsvSpec{{"a", "b"}, {"label"}, true}).second;
  EXPECT_NE(listed.find("df.dropna(subset=['a', 'b', 'label'])"), std::string::npos) << listed;
  EXPECT_NE(listed.find("leave the column out with data.features: [a]"), std::string::npos) << listed;
}

// A table in parts (a folder of part-*.csv, or a pattern matching them) is read as one, in sorted
// order: the later parts' columns found by name, class names numbered over all parts.
TEST(Csv, ATableInPartsIsReadAsOne) {
  test_support::ScratchFolder root("csv-parts");
  const auto parts = root.path / "parts";
  std::filesystem::create_directories(parts);
  std::ofstream(parts / "part-0.csv") << "a,b,species\n1,2,rose\n3,4,iris\n";
  std::ofstream(parts / "part-1.csv") << "species,b,a\nlily,6,5\nrose,8,7\n";  // columns in another order
  std::ofstream(parts / "_SUCCESS") << "";                                     // Spark's marker: not a part
  std::ofstream(parts / "._part-0.csv") << "\x00\x05\x16\x07";                 // macOS's AppleDouble copy: not a part
  std::ofstream(parts / "_part-2.csv") << "a,b,species\n";                     // a writer's temporary part: not one yet
  EXPECT_EQ(csv_parts(parts.string()), (std::vector<std::string>{(parts / "part-0.csv").string(), (parts / "part-1.csv").string()}));
  EXPECT_EQ(csv_parts((parts / "part-*.csv").string()).size(), 2U);
  EXPECT_TRUE(csv_parts((parts / "part-0.csv").string()).empty());  // a file is read as itself
  EXPECT_TRUE(csv_parts(root.path.string()).empty());               // a folder without CSV files

  SourceSpec spec;
  spec.source = "csv";
  spec.path = (parts / "part-*.csv").string();
  spec.labels = {"species"};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"iris", "lily", "rose"}));
  const auto whole = sources.train->tensors();
  ASSERT_TRUE(whole);
  EXPECT_TRUE(at::equal(whole->inputs, at::arange(1, 9, at::kFloat).view({4, 2}))) << whole->inputs;
  EXPECT_TRUE(at::equal(whole->targets, at::tensor(std::vector<std::int64_t>{2, 0, 1, 2}))) << whole->targets;
  EXPECT_NE(sources.train->description().find("(2 files, 4 samples; features a, b; label species)"), std::string::npos)
      << sources.train->description();

  // A bad cell names its part and line; names in one part and ids in another are refused.
  std::ofstream(parts / "part-2.csv") << "a,b,species\n9,oops,rose\n";
  EXPECT_NE(usage_error([&] { open_sources(spec); }).find("part-2.csv:2: column 'b' (2): 'oops' is not a number"), std::string::npos);
  std::ofstream(parts / "part-2.csv") << "a,b,species\n9,10,1\n";
  EXPECT_NE(usage_error([&] {
              open_sources(spec);
            }).find("part-0.csv' has class names in its label column, but '" + (parts / "part-2.csv").string() + "' has class ids"),
            std::string::npos);
}

// Numbers as strtod reads them (a sign, exponents, blanks and a CR around them, quotes), a value
// below float32's range as 0; what is not a number, or beyond float32, names the cell.
TEST(Csv, NumbersAreReadAsStrtodReadsThem) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-numbers.csv").string();
  const auto read = [&](const std::string& row) {
    std::ofstream(path) << "a,\"b,c\",label\r\n" << row << "\r\n";
    return read_csv(path, CsvSpec{{}, {"label"}, true});
  };
  const auto set = read(" +4.5e1 ,\"-.25\",1");
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({45.0f, -0.25f}).view({1, 2}))) << set.inputs;
  EXPECT_TRUE(at::equal(read("1e-400,2,1").inputs.select(1, 0), at::zeros({1}))) << "underflow is 0";
  EXPECT_NE(usage_error([&] { read("+-4,1,0"); }).find(":2: column 'a' (1): '+-4' is not a number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("0x10,1,0"); }).find("'0x10' is not a number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("1e400,1,0"); }).find("'1e400' is not a finite float32 number"), std::string::npos);
  EXPECT_NE(usage_error([&] { read("1,\"2\"\"\",0"); }).find("column 'b,c' (2): '2\"' is not a number"), std::string::npos);
  std::filesystem::remove(path);
}

// A quoted cell may hold line breaks (RFC 4180; Python's csv and pandas write free text so): the
// record runs on to its closing quote, and errors name the lines it spans. A quote inside a plain
// cell is text, as pandas reads it; a quote never closed names the line that opened it.
TEST(Csv, QuotedCellsMaySpanLinesAndUnclosedQuotesAreNamed) {
  const auto set = read_csv(fixture("csv/free_text.csv"), CsvSpec{{"a", "b"}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::arange(1, 11, at::kFloat).view({5, 2}))) << set.inputs;
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0L, 1L, 0L, 1L, 0L}))) << set.targets;
  const auto note = usage_error([] { read_csv(fixture("csv/free_text.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(note.find("free_text.csv:2-3: column 'note' (2): 'line one\\nline two, with a comma' is not a number"), std::string::npos)
      << note;
  const auto spanning = usage_error([] { read_csv(fixture("bad/free_text_bad_cell.csv"), CsvSpec{{"a", "b"}, {"label"}, true}); });
  EXPECT_NE(spanning.find("free_text_bad_cell.csv:2-4: column 'b' (3): 'oops' is not a number"), std::string::npos) << spanning;
  const auto unclosed = usage_error([] { read_csv(fixture("bad/unclosed_quote.csv"), CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(unclosed.find("unclosed_quote.csv:3: a quoted cell opened on this line is never closed"), std::string::npos) << unclosed;
}

TEST(Csv, ARowWithTheWrongCellCountIsNamed) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-short-row.csv").string();
  std::ofstream(path) << "a,b,label\n1,2,0\n3\n";
  const auto short_row = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(short_row.find("gputrain-csv-short-row.csv:3: 1 cell, but the header has 3 columns"), std::string::npos) << short_row;
  std::filesystem::remove(path);
}

// A free-text cell in the wrong place is quoted on one line and cut at 60 characters.
TEST(Csv, ALongCellIsShortenedInTheError) {
  const auto path = (std::filesystem::temp_directory_path() / "gputrain-csv-long-cell.csv").string();
  std::ofstream(path) << "a,label\n\"" << std::string(100, 'x') << "\",0\n";
  const auto message = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(message.find(":2: column 'a' (1): '" + std::string(60, 'x') + "...' is not a number"), std::string::npos) << message;
  std::filesystem::remove(path);
}

// data.exclude leaves columns (an id, free text) out of all the others; a name not in the header
// is named with the closest one.
// Excel reads, and some exports write, a first line "sep=;" naming the delimiter; it is not the
// header, and errors still name the lines an editor shows.
TEST(Csv, AnExcelSepLineNamesTheDelimiter) {
  test_support::ScratchFolder folder("csv-sep-line");
  const auto good = (folder.path / "good.csv").string();
  std::ofstream(good, std::ios::binary) << "sep=;\r\na;b;label\r\n1,5;2;0\r\n3;4;1\r\n";
  const auto error = usage_error([&] { read_csv(good, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(good + ":3: column 'a' (1): '1,5' is not a number: it has a decimal comma"), std::string::npos) << error;
  std::ofstream(good, std::ios::binary) << "sep=|\na|b|label\n1|2|0\n3|4|1\n";
  const auto set = read_csv(good, CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1}, at::kLong)));
}

// A spreadsheet exports the cells it formatted but left empty as rows of delimiters alone (";;");
// they hold no sample and are skipped as blank lines are, where they were missing values before.
TEST(Csv, RowsOfDelimitersAloneAreSkippedAsBlankLines) {
  test_support::ScratchFolder folder("csv-delimiter-rows");
  const auto path = (folder.path / "export.csv").string();
  std::ofstream(path, std::ios::binary) << "a;b;label\r\n1;2;0\r\n;;\r\n3;4;1\r\n;;\r\n ; ;\r\n";
  const auto set = read_csv(path, CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})));
  std::ofstream(path, std::ios::binary) << "a;b;label\n;;\n1;x;0\n";
  const auto error = usage_error([&] { read_csv(path, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(path + ":3: column 'b' (2): 'x' is not a number"), std::string::npos) << error;
  // A row with some cells filled is a row with missing values, as before.
  std::ofstream(path, std::ios::binary) << "a;b;label\n1;2;0\n;;1\n";
  EXPECT_NE(usage_error([&] {
              read_csv(path, CsvSpec{{}, {"label"}, true});
            }).find(path + ":3: column 'a' (1) is empty"),
            std::string::npos);
}

// Columns are found by name (in a validation file, the weights' data.features, predict.py), so a
// name the header gives twice is refused where it would be read, with the fix; unread, it is no
// matter.
TEST(Csv, AColumnNameGivenTwiceIsRefusedWhereItIsRead) {
  test_support::ScratchFolder folder("csv-twice");
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto path = (folder.path / name).string();
    std::ofstream(path) << text;
    return path;
  };
  const auto features = write("features.csv", "a,a,label\n1,2,0\n3,4,1\n");
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(features, CsvSpec{{}, {"label"}, true});
            }),
            "'" + features +
                "' names column 'a' 2 times in its header (columns 1, 2), and gputrain finds columns by name\n"
                "give each its own name in the header (pandas reads them as 'a' and 'a.1'), or leave them out with data.exclude: [a]");
  const auto labels = write("labels.csv", "a,b,label,label\n1,2,0,0\n3,4,1,1\n");
  EXPECT_EQ(usage_error_and_fix([&] {
              read_csv(labels, CsvSpec{{}, {"label"}, true});
            }),
            "'" + labels +
                "' names column 'label' 2 times in its header (columns 3, 4), and gputrain finds columns by name\n"
                "give each its own name in the header (pandas reads them as 'label' and 'label.1')");
  const auto unread = write("unread.csv", "a,note,b,note,label\n1,x,2,y,0\n3,z,4,w,1\n");
  EXPECT_EQ(read_csv(unread, CsvSpec{{"a", "b"}, {"label"}, true}).inputs.size(1), 2);
  CsvSpec excluded{{}, {"label"}, true};
  excluded.exclude = {"note"};
  EXPECT_EQ(read_csv(unread, excluded).inputs.size(1), 2);
}

TEST(Csv, ExcludedColumnsAreLeftOutOfTheFeatures) {
  CsvSpec spec{{}, {"species"}, true};
  spec.exclude = {"note"};
  CsvColumns columns;
  const auto set = read_csv(fixture("csv/iris.csv"), spec, nullptr, &columns);
  EXPECT_EQ(columns.features, (std::vector<std::string>{"sepal_length", "sepal_width"}));
  EXPECT_EQ(set.inputs.size(1), 2);
  spec.exclude = {"notes"};
  const auto unknown = usage_error([&] { read_csv(fixture("csv/iris.csv"), spec); });
  EXPECT_NE(unknown.find("has no column 'notes' (data.exclude); did you mean 'note'?"), std::string::npos) << unknown;
  spec.exclude = {"note", "sepal_length", "sepal_width"};
  const auto nothing = usage_error([&] { read_csv(fixture("csv/iris.csv"), spec); });
  EXPECT_NE(nothing.find("has no feature columns besides the label and data.exclude"), std::string::npos) << nothing;
}

TEST(Csv, SemicolonAndTabSeparatedFilesAreRead) {
  const auto expected = read_csv(fixture("csv/numeric.csv"), CsvSpec{{}, {"label"}, true});
  for (const char* name : {"csv/semicolons.csv", "csv/tabs.tsv"}) {
    const auto set = read_csv(fixture(name), CsvSpec{{}, {"label"}, true});
    EXPECT_TRUE(at::equal(set.inputs, expected.inputs)) << name;
    EXPECT_TRUE(at::equal(set.targets, expected.targets)) << name;
  }
}

// Lines ended by '\r' alone (classic Mac OS; Excel for Mac's "CSV (Macintosh)") read as pandas
// reads them, and a bad cell's error names the line an editor shows it on.
TEST(Csv, ClassicMacLineBreaksAreRead) {
  const auto set = read_csv(fixture("csv/mac_line_breaks.csv"), CsvSpec{{}, {"label"}, true});
  EXPECT_TRUE(at::equal(set.inputs, at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).reshape({3, 2})));
  EXPECT_TRUE(at::equal(set.targets, at::tensor({0, 1, 0}, at::kLong)));

  test_support::ScratchFolder scratch("mac-line-breaks");
  const auto bad = (scratch.path / "bad.csv").string();
  std::ofstream(bad, std::ios::binary) << "a,b,label\r1,2,0\r3,oops,1\r";
  const auto error = usage_error([&] { read_csv(bad, CsvSpec{{}, {"label"}, true}); });
  EXPECT_NE(error.find(bad + ":3: column 'b' (2): 'oops' is not a number"), std::string::npos) << error;
}

TEST(Csv, RegressionTargetsAreOneColumn) {
  const auto set = read_csv(fixture("csv/numeric.csv"), CsvSpec{{"a"}, {"b"}, false});
  EXPECT_EQ(set.targets.sizes(), (std::vector<std::int64_t>{10, 1}));
  EXPECT_FLOAT_EQ(set.targets[9][0].item<float>(), 4.5f);
}

TEST(Idx, ReadsMnistPlainAndGzipped) {
  const auto train = read_mnist(fixture("mnist"), "train");
  EXPECT_EQ(train.inputs.sizes(), (std::vector<std::int64_t>{5, 1, 28, 28}));
  EXPECT_EQ(train.inputs.scalar_type(), at::kByte);
  EXPECT_EQ(train.inputs.flatten()[300].item<int>(), 300 % 251);
  EXPECT_TRUE(at::equal(train.targets, at::tensor({3, 1, 4, 1, 5}, at::kLong)));
  const auto test = read_mnist(fixture("mnist"), "t10k");
  EXPECT_EQ(test.size(), 2);
  EXPECT_TRUE(at::equal(test.inputs, train.inputs.slice(0, 0, 2)));
}

// The gzip reader under both: zeros after the last member are padding, anything else after it and
// a corrupt byte inside are errors naming the file and the byte.
TEST(Gzip, PaddingIsSkippedAndCorruptOrTrailingBytesAreNamed) {
  std::ifstream in(fixture("csv/numeric.csv.gz"), std::ios::binary);
  const std::string packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream plain_in(fixture("csv/numeric.csv"), std::ios::binary);
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
  EXPECT_TRUE(at::equal(read_idx(fixture("idx/floats.idx")), at::arange(6, at::kFloat).view({2, 3})));
  EXPECT_TRUE(at::equal(read_idx(fixture("idx/shorts.idx")), at::tensor({-2, 300, 7}, at::kShort)));
  EXPECT_NE(usage_error([] { read_idx(fixture("bad/truncated-images-idx3-ubyte")); }).find("truncated"), std::string::npos);
  EXPECT_NE(usage_error([] { read_idx(fixture("npy/f4_le_c.npy")); }).find("magic"), std::string::npos);
}

TEST(Cifar10, ReadsRecordsAcrossBatches) {
  const auto set = read_cifar10(cifar10_files(fixture("cifar"), true));
  ASSERT_EQ(set.size(), 7);
  const auto p1 = read_npy(fixture("cifar/data_batch_1.bin.pixels.npy")), p2 = read_npy(fixture("cifar/data_batch_2.bin.pixels.npy"));
  EXPECT_TRUE(at::equal(set.inputs, at::cat({p1, p2})));
  EXPECT_TRUE(at::equal(set.targets, at::cat({read_npy(fixture("cifar/data_batch_1.bin.labels.npy")),
                                              read_npy(fixture("cifar/data_batch_2.bin.labels.npy"))})));
  const auto bad = usage_error([] { read_cifar10(cifar10_files(fixture("bad/cifar"), true)); });
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

TEST(Images, DecodeLikePillow) {
  for (const std::string name : {"rgb.png", "grey.png", "rgba.png", "palette.png", "rgb.jpg", "grey.jpg", "cmyk.jpg"}) {
    const auto expected = read_npy(fixture("images/exact/" + name + ".npy"));
    // A one-file folder per image: the source under test is the image folder itself.
    const auto root = std::filesystem::temp_directory_path() / ("gputrain-decode-" + name);
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "only");
    std::filesystem::copy_file(fixture("images/exact/" + name), root / "only" / name);
    SourceSpec spec;
    spec.source = "image_folder";
    spec.path = root.string();
    spec.image_size = {16, 24};  // the images' own size: no resampling
    const auto sources = open_sources(spec);
    const auto got = materialize(*sources.train, 1).set.inputs[0];
    const auto diff = (got.to(at::kInt) - expected.to(at::kInt)).abs().max().item<int>();
    // PNG is lossless; for JPEG both sides use libjpeg-turbo, so at most rounding differs.
    EXPECT_LE(diff, name.find(".png") != std::string::npos ? 0 : 2) << name;
  }
}

// Resized and cropped as Pillow does it (docs/data.md, "Images"): the fixtures' expected samples
// are docs/examples/predict.py's, so what Python users are told is what gputrain does. PNG exactly;
// JPEG within the levels two libjpeg-turbo builds decode apart.
TEST(Images, ResizeAndCropLikePillow) {
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixture("images/resize"))) {
    const auto expected_file = entry.path().filename().string();
    if (entry.path().extension() != ".npy") continue;
    const auto image = expected_file.substr(0, expected_file.find('.', expected_file.find('.') + 1));   // down.png
    const auto size = expected_file.substr(image.size() + 1, expected_file.size() - image.size() - 5);  // 24x20
    const std::int64_t height = std::stoll(size.substr(0, size.find('x'))), width = std::stoll(size.substr(size.find('x') + 1));
    const auto bytes = test_support::file_bytes(fixture("images/resize/" + image));
    std::vector<std::uint8_t> chw(static_cast<std::size_t>(3 * height * width));
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), height, width, chw.data());
    const auto got = at::from_blob(chw.data(), {3, height, width}, at::kByte).to(at::kInt);
    const auto expected = read_npy(entry.path().string()).to(at::kInt);
    ASSERT_EQ(expected.sizes(), got.sizes()) << expected_file;
    const auto diff = (got - expected).abs();
    if (image.find(".png") != std::string::npos) {
      EXPECT_EQ(diff.max().item<int>(), 0) << expected_file << ": " << diff.gt(0).sum().item<int>() << " bytes differ";
    } else {
      EXPECT_LE(diff.max().item<int>(), 3) << expected_file;
      EXPECT_LT(diff.to(at::kFloat).mean().item<float>(), 0.5f) << expected_file;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 7U);
}

TEST(ImageFolder, ListsClassesSkipsCorruptFilesAndResizes) {
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = fixture("folder/train");
  spec.val_path = fixture("folder/val");
  spec.image_size = {12, 10};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(sources.classes, 2);
  // 3 + 3 images, the broken JPEG and an empty file; dot-folders (.ipynb_checkpoints, cat/.thumbs),
  // .DS_Store and Thumbs.db are the tools', not classes or samples; README.txt, 3.bmp and 4.webp
  // are left out but said so, the images with the line that converts them; cat/1.webp has a
  // cat/1.png beside it, converted already.
  EXPECT_EQ(sources.train->size(), 8);
  const auto description = sources.train->description();
  EXPECT_NE(description.find("(8 images, 2 classes; 2 images in formats not read (1 .bmp, 1 .webp); 1 other file not read, e.g. '" +
                             fixture("folder/train") + "/dog/README.txt': only .jpg, .jpeg and .png are)"),
            std::string::npos)
      << description;
  EXPECT_EQ(sources.val->description().find("not read"), std::string::npos) << sources.val->description();
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_EQ(sources.notes[0],
            "2 images in " + fixture("folder/train") +
                " are .bmp or .webp, which gputrain does not decode, so they are not trained on; Pillow writes a .png beside "
                "each: python3 -c \"import pathlib, PIL.Image as I; [I.open(p).convert('RGB').save(p.with_suffix('.png')) for "
                "p in pathlib.Path('" +
                fixture("folder/train") + "').rglob('*') if p.suffix.lower() in ('.bmp', '.webp')]\"");
  EXPECT_EQ(sources.val->size(), 2);
  // The labels are the folders, known without decoding a file (the unreadable ones included).
  const auto ids = sources.train->class_ids();
  ASSERT_TRUE(ids.has_value());
  EXPECT_TRUE(at::equal(*ids, at::tensor({0, 0, 0, 0, 1, 1, 1, 1}, at::kLong))) << *ids;
  const auto loaded = materialize(*sources.train, 2);
  ASSERT_EQ(loaded.skipped.size(), 2U);
  EXPECT_NE(loaded.skipped[0].find("broken.jpg: corrupt JPEG"), std::string::npos) << loaded.skipped[0];
  EXPECT_NE(loaded.skipped[1].find("empty.png: the file is empty (0 bytes)"), std::string::npos) << loaded.skipped[1];
  ASSERT_EQ(loaded.set.size(), 6);
  EXPECT_EQ(loaded.set.inputs.sizes(), (std::vector<std::int64_t>{6, 3, 12, 10}));
  EXPECT_TRUE(at::equal(loaded.set.targets, at::tensor({0, 0, 0, 1, 1, 1}, at::kLong)));
  // Solid colours survive resizing and cropping (JPEG within a few levels).
  const auto cat_red = loaded.set.inputs.select(0, 0).select(0, 0).to(at::kFloat).mean().item<float>();
  const auto dog_blue = loaded.set.inputs.select(0, 5).select(0, 2).to(at::kFloat).mean().item<float>();
  EXPECT_NEAR(cat_red, 200, 4);
  EXPECT_NEAR(dog_blue, 200, 4);

  // The same folder for both (an evaluation on the training images): one note, for both roles.
  spec.val_path = fixture("folder/train") + "/";
  const auto both = open_sources(spec);
  ASSERT_EQ(both.notes.size(), 2U);
  EXPECT_NE(both.notes[0].find("so they are not trained or validated on; Pillow"), std::string::npos) << both.notes[0];
  // Validating on the training samples is said too: its figures flatter the model.
  EXPECT_NE(both.notes[1].find("note: data.val_path is data.path itself, so validation measures the samples the model learns from"),
            std::string::npos)
      << both.notes[1];
  spec.val_path = fixture("folder/val");
  for (const auto& note : open_sources(spec).notes) EXPECT_EQ(note.find("data.val_path is data.path itself"), std::string::npos) << note;
}

// A validation class folder the training folder lacks is refused, with its near miss and the
// training classes: the model has no output for it.
TEST(ImageFolder, AValidationClassTheTrainingFolderLacksIsNamedWithItsNearMiss) {
  const auto val = std::filesystem::temp_directory_path() / "gputrain-val-misspelt-class";
  std::filesystem::remove_all(val);
  for (const std::string name : {"cat", "dgo"}) {
    std::filesystem::create_directories(val / name);
    std::filesystem::copy_file(fixture("images/checker.png"), val / name / "0.png");
  }
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = fixture("folder/train");
  spec.val_path = val.string();
  spec.image_size = {12, 10};
  const auto error = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("'" + (val / "dgo").string() + "' is a class the training folder does not have; did you mean 'dog'?"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("the model learns the training folder's classes only (cat, dog)"), std::string::npos) << error;
  std::filesystem::remove_all(val);
}

// A dataset's download given before it was unpacked: the command that unpacks it.
TEST(ImageFolder, AZipArchiveGetsTheLineThatUnpacksIt) {
  const auto archive = (std::filesystem::temp_directory_path() / "gputrain-photos.zip").string();
  std::ofstream(archive) << "PK";
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = archive;
  spec.image_size = {12, 10};
  const auto error = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("'" + archive + "' is not a folder but an archive\nunpack it (unzip " + archive + ")"), std::string::npos) << error;
  std::filesystem::remove(archive);
}

// A JPEG cut short (an interrupted download or copy) is skipped, as Pillow refuses it; libjpeg
// alone would fill the missing rows grey, and the run would train on them.
TEST(Images, ATruncatedJpegIsSkippedAsPillowRefusesIt) {
  const auto bytes = test_support::file_bytes(fixture("bad/truncated.jpg"));
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
    ADD_FAILURE() << "the truncated JPEG was decoded";
  } catch (const SkippedSample& e) {
    EXPECT_NE(std::string(e.what()).find("Premature end of JPEG file"), std::string::npos) << e.what();
  }
}

// Images whose header promises more pixels than Pillow opens (a 1 MB PNG of zeros can say 32000 x
// 32000: 4 GB and seconds to decode, per loader thread) are skipped before a pixel is decoded, with
// the size and the fix. One pixel within the bound is decoded as usual (here: found corrupt).
namespace {

std::string skip_reason(const std::string& bytes) {
  std::vector<std::uint8_t> chw(3 * 16 * 16);
  try {
    decode_image_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 16, 16, chw.data());
  } catch (const SkippedSample& e) {
    return e.what();
  }
  return "decoded";
}

void put_big_endian(std::string& bytes, std::size_t at, std::uint32_t value, int size) {
  for (int i = 0; i < size; ++i) bytes[at + i] = static_cast<char>((value >> (8 * (size - 1 - i))) & 0xff);
}

// A chunk with its length and the CRC-32 libpng checks.
std::string png_chunk(const std::string& type_and_data) {
  std::string chunk(8, '\0');
  put_big_endian(chunk, 0, static_cast<std::uint32_t>(type_and_data.size() - 4), 4);
  chunk.replace(4, 4, type_and_data);
  chunk.resize(4 + type_and_data.size() + 4);
  put_big_endian(chunk, chunk.size() - 4,
                 static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(type_and_data.data()), type_and_data.size())), 4);
  return chunk;
}

// A PNG whose header says width x height, with an empty image data chunk.
std::string png_header(std::uint32_t width, std::uint32_t height) {
  std::string ihdr = "IHDR" + std::string(13, '\0');
  put_big_endian(ihdr, 4, width, 4);
  put_big_endian(ihdr, 8, height, 4);
  ihdr[12] = 8;  // 8-bit grey
  return "\x89PNG\r\n\x1a\n" + png_chunk(ihdr) + png_chunk("IDAT") + png_chunk("IEND");
}

// The fixture's JPEG with its frame header's size changed.
std::string jpeg_declaring(std::uint16_t width, std::uint16_t height) {
  auto bytes = test_support::file_bytes(fixture("images/exact/rgb.jpg"));
  const auto frame = bytes.find("\xff\xc0");  // SOF0: length, precision, height, width
  EXPECT_NE(frame, std::string::npos);
  put_big_endian(bytes, frame + 5, height, 2);
  put_big_endian(bytes, frame + 7, width, 2);
  return bytes;
}

}  // namespace

TEST(Images, AHeaderOfMorePixelsThanPillowOpensIsSkippedBeforeDecoding) {
  const auto png = skip_reason(png_header(32000, 32000));
  EXPECT_NE(png.find("too large: 32000 x 32000 = 1,024,000,000 pixels, more than the 178,956,970 Pillow opens (its "
                     "decompression-bomb limit); decoding it would take 3.81 GiB of RAM per loader thread: scale it down first "
                     "(ImageMagick: mogrify -resize '8192x8192>' FILE)"),
            std::string::npos)
      << png;
  EXPECT_NE(skip_reason(jpeg_declaring(13378, 13377)).find("too large: 13378 x 13377 = 178,957,506 pixels"), std::string::npos);
  // Within the bound (13377 x 13377 = 178,944,129) the decoders run: the PNG's data is found short.
  EXPECT_EQ(skip_reason(png_header(13377, 13377)).rfind("corrupt PNG", 0), 0U) << skip_reason(png_header(13377, 13377));
  EXPECT_EQ(skip_reason(jpeg_declaring(13377, 13377)).find("too large"), std::string::npos);
}

// data.standardize on an image folder: the images as the cache decodes them, all or a seeded choice.
TEST(SampleStats, AnImageFolderIsMeasuredAsItsDecodedImages) {
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = fixture("folder/train");
  spec.image_size = {12, 10};
  const auto train = open_sources(spec).train;
  const auto all = measure_sample_stats(train, 10000, 2, 7);
  const auto decoded = materialize(*train, 2).set.inputs;
  const auto expected = measure_channel_stats(decoded);
  EXPECT_EQ(all.measured, 6);
  EXPECT_EQ(all.skipped, 2);  // broken.jpg and empty.png
  EXPECT_EQ(all.stats.mean, expected.mean);
  EXPECT_EQ(all.stats.std, expected.std);
  EXPECT_GT(all.stats.mean[0], all.stats.mean[1]);  // red cats outweigh blue dogs in red

  const auto some = measure_sample_stats(train, 4, 2, 7);
  EXPECT_EQ(some.measured + some.skipped, 4);
  const auto again = measure_sample_stats(train, 4, 1, 7);
  EXPECT_EQ(again.stats.mean, some.stats.mean);  // the choice is the seed's, not the threads'
}

TEST(ImageFolder, AClassFolderWithoutImagesIsAnError) {
  test_support::ScratchFolder root("empty-class");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  std::filesystem::create_directories(root.path / "dog");
  std::ofstream(root.path / "dog" / "notes.txt") << "to do: take photos";
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  const auto error = usage_error([&] { open_sources(spec); });
  EXPECT_NE(error.find("class 'dog' has no images: '" + (root.path / "dog").string() + "' holds no .jpg, .jpeg or .png files"),
            std::string::npos)
      << error;
  // Its images are in a format not decoded: the fix converts them.
  std::filesystem::remove(root.path / "dog" / "notes.txt");
  std::ofstream(root.path / "dog" / "0.webp") << "RIFF";
  try {
    open_sources(spec);
    ADD_FAILURE() << "opened a class of .webp images";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "class 'dog' has no images gputrain decodes: '" + (root.path / "dog").string() +
                                         "' holds no .jpg, .jpeg or .png files, but 1 image in other formats (.webp)");
    EXPECT_NE(e.remedy().find("pathlib.Path('" + (root.path / "dog").string() + "').rglob('*') if p.suffix.lower() in ('.webp',)]"),
              std::string::npos)
        << e.remedy();
  }
  // A validation folder may lack a class's images: its accuracy is then over the others.
  std::filesystem::remove(root.path / "dog" / "0.webp");
  spec.path = fixture("folder/train");
  spec.val_path = root.path.string();
  EXPECT_EQ(open_sources(spec).val->size(), 1);
}

// An image directly in the root has no class: left out and said so, apart from files of other
// formats; a root of images alone says where they belong.
TEST(ImageFolder, ImagesOutsideTheClassFoldersAreNamedAsSuch) {
  test_support::ScratchFolder root("outside-classes");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  std::filesystem::copy_file(fixture("images/exact/rgb.png"), root.path / "stray.png");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), root.path / "also.jpg");
  std::ofstream(root.path / "notes.txt") << "labels to come";
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  const auto description = open_sources(spec).train->description();
  EXPECT_NE(
      description.find("(1 image, 1 class; 2 images outside the class sub-folders not read, e.g. '" + (root.path / "also.jpg").string() +
                       "' (an image's class is the sub-folder it is in); 1 other file not read, e.g. '" +
                       (root.path / "notes.txt").string() + "': only .jpg, .jpeg and .png are)"),
      std::string::npos)
      << description;

  std::filesystem::remove_all(root.path / "cat");
  EXPECT_EQ(usage_error_and_fix([&] { open_sources(spec); }),
            "'" + root.path.string() + "' has no sub-folders: its 2 images lie directly in it, where none has a class\n" +
                "put each class's images in a sub-folder named after the class (" + (root.path / "CLASS" / "IMAGE.jpg").string() + ")");
}

// An ext4 volume's root holds lost+found, which only root may read: the filesystem's folder, not a
// class (as a class it stopped the run: no images, or this user's "Permission denied").
TEST(ImageFolder, LostAndFoundAtAVolumesRootIsNotAClass) {
  test_support::ScratchFolder root("lost-found");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  std::filesystem::create_directories(root.path / "lost+found" / "#1234");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{"cat"}));
  EXPECT_EQ(sources.train->size(), 1);
}

// Images in a linked sub-folder of a class are that class's, as torchvision's os.walk(followlinks=True)
// finds them (they were left out, unsaid); a link back up is followed once, not in a loop; a dangling
// link is a file that will not read, named when it is read rather than left out unsaid.
TEST(ImageFolder, LinkedSubFoldersAreReadOnceEachAndADanglingLinkIsNamed) {
  test_support::ScratchFolder root("linked");
  const auto images = root.path / "elsewhere";
  std::filesystem::create_directories(images);
  for (const char* name : {"0.jpg", "1.jpg"}) std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), images / name);
  const auto train = root.path / "train";
  std::filesystem::create_directories(train / "cat");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), train / "cat" / "own.jpg");
  std::filesystem::create_directory_symlink(images, train / "cat" / "more");
  std::filesystem::create_directory_symlink(train / "cat", train / "cat" / "loop");  // back up: once
  std::filesystem::create_symlink(root.path / "gone.jpg", train / "cat" / "gone.jpg");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = train.string();
  spec.image_size = {4, 4};
  const auto sources = open_sources(spec);
  ASSERT_EQ(sources.train->size(), 4);
  std::vector<std::string> origins;
  for (std::int64_t i = 0; i < 4; ++i) origins.push_back(sources.train->origin(i));
  const auto in_cat = [&](const std::string& name) { return (train / "cat" / name).string(); };
  EXPECT_EQ(origins, (std::vector<std::string>{in_cat("gone.jpg"), in_cat("more/0.jpg"), in_cat("more/1.jpg"), in_cat("own.jpg")}));
  const auto loaded = materialize(*sources.train, 1);
  ASSERT_EQ(loaded.skipped.size(), 1U);
  EXPECT_NE(loaded.skipped[0].find("gone.jpg: cannot open the file"), std::string::npos) << loaded.skipped[0];
  EXPECT_EQ(loaded.set.size(), 3);
}

// An image that cannot be opened because the process may open no more files is no fault of that
// image: the run ends with the limit's fix rather than skipping every image after it as unreadable.
TEST(ImageFolder, TooManyOpenFilesIsAnErrorWithTheLimitsFixNotASkippedImage) {
  test_support::ScratchFolder root("open-files");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  spec.image_size = {4, 4};
  const auto sources = open_sources(spec);
  EXPECT_EXIT(
      {
        rlimit limit{};  // a low limit, all of it held, as a leak or a crowded process holds it
        ::getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = 64;
        ::setrlimit(RLIMIT_NOFILE, &limit);
        while (::open("/dev/null", O_RDONLY) >= 0) {
        }
        std::vector<std::uint8_t> image(3 * 4 * 4);
        std::int64_t label = 0;
        try {
          sources.train->read(0, image.data(), &label);
        } catch (const gputrain::Error& e) {
          std::fprintf(stderr, "%s | %s\n", e.what(), e.remedy().c_str());
          std::_Exit(3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(3), "cannot open the file: Too many open files \\| .*ulimit -n");
}

TEST(Sources, ArraysByKeyAndDefaults) {
  SourceSpec spec;
  spec.source = "npz";
  spec.path = fixture("npz/deflated.npz");  // features/labels: found among the usual names
  auto sources = open_sources(spec);
  EXPECT_EQ(sources.train->size(), 50);
  EXPECT_EQ(sources.classes, 3);
  EXPECT_EQ(sources.train->layout().input_shape, (std::vector<std::int64_t>{6}));

  spec.path = fixture("npz/custom_keys.npz");
  const auto which = usage_error([&] { open_sources(spec); });
  EXPECT_NE(which.find("which array holds the features? none is named x, features"), std::string::npos) << which;
  spec.features = {"pixels"};
  spec.labels = {"classes"};
  EXPECT_EQ(open_sources(spec).train->size(), 50);

  SourceSpec npy;
  npy.source = "npy";
  npy.path = fixture("npz/x.npy");
  npy.labels = {fixture("npz/y.npy")};
  npy.val_path = fixture("npz/x.npy");
  npy.val_labels = fixture("npy/scalar_per_sample.npy");  // 7 labels for 50 samples
  const auto mismatch = usage_error([&] { open_sources(npy); });
  EXPECT_NE(mismatch.find("50 samples of features but 7 labels"), std::string::npos) << mismatch;
  SourceSpec empty;
  empty.source = "npz";
  empty.path = fixture("bad/empty.npz");
  const auto none = usage_error([&] { open_sources(empty); });
  EXPECT_NE(none.find("empty.npz': no samples (features of shape [0, 6])"), std::string::npos) << none;

  for (const bool features : {true, false}) {  // a 0-d array, from either side, is named, not indexed
    auto one_value = npy;
    (features ? one_value.val_path : one_value.val_labels) = fixture("bad/zero_dim.npy");
    one_value.task = features ? "classification" : "regression";
    const auto message = usage_error([&] { open_sources(one_value); });
    EXPECT_NE(message.find(std::string("the ") + (features ? "features" : "labels") + " are a single value (an array of shape ())"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("zero_dim.npy"), std::string::npos) << message;
  }

  SourceSpec st;
  st.source = "safetensors";
  st.path = fixture("safetensors/train.safetensors");
  st.task = "regression";
  const auto reg = open_sources(st);
  float target[1];
  float input[6];
  reg.train->read(4, input, target);
  EXPECT_FLOAT_EQ(target[0], 4 % 3);
}

TEST(Sources, MnistAndCifarFindTheirValidationFiles) {
  SourceSpec spec;
  spec.source = "mnist";
  spec.path = fixture("mnist");
  auto mnist = open_sources(spec);
  ASSERT_TRUE(mnist.val);
  EXPECT_EQ(mnist.val->size(), 2);
  EXPECT_EQ(mnist.classes, 6);  // labels go up to 5
  spec.source = "cifar10";
  spec.path = fixture("cifar");
  const auto cifar = open_sources(spec);
  EXPECT_EQ(cifar.train->size(), 7);
  EXPECT_EQ(cifar.val->size(), 2);
  EXPECT_EQ(cifar.train->layout().input_dtype, at::kByte);  // uint8 until the GPU converts it
}

// A bad validation path is reported under data.val_path, whose value is the one to fix, with the
// usage exit code; for every source that reads one.
// A file read as another format than its name says gets the source its name gives as the fix, not
// the wrong reader's own ("write it with safetensors.torch.save_file").
TEST(Sources, AFileReadAsAnotherFormatIsNamedByItsOwn) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"csv", fixture("npz/x.npy"), "npy"}, {"safetensors", fixture("csv/iris.csv"), "csv"}, {"npy", fixture("npz/stored.npz"), "npz"}};
  for (const auto& [source, path, named] : cases) {
    SourceSpec spec;
    spec.source = source;
    spec.path = path;
    spec.labels = {source == "npy" ? fixture("npz/y.npy") : "species"};
    const auto message = test_support::usage_error_and_fix([&] { open_sources(spec); });
    EXPECT_NE(message.find("\ndata.source is " + source + ", but '" + path + "' looks like " + named + " data: set data.source: " + named),
              std::string::npos)
        << message;
  }
}

TEST(Sources, ErrorsInTheValidationDataNameDataValPath) {
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"image_folder", fixture("folder/train")}, {"cifar10", fixture("cifar")}, {"mnist", fixture("mnist")}};
  for (const auto& [source, path] : sources) {
    SourceSpec spec;
    spec.source = source;
    spec.path = path;
    spec.val_path = "/no/such/validation";
    try {
      open_sources(spec);
      ADD_FAILURE() << source << ": a missing data.val_path was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("data.val_path: ", 0), 0u) << source << ": " << e.what();
      EXPECT_EQ(e.exit_code(), ExitCode::usage) << source;
      EXPECT_EQ(e.remedy().find("data.path"), std::string::npos) << source << ": " << e.remedy();
    }
  }
}

// A missing labels file is reported under the key that names it.
TEST(Sources, AMissingLabelsFileNamesItsKey) {
  SourceSpec spec;
  spec.source = "npy";
  spec.path = fixture("npz/x.npy");
  spec.labels = {"/no/such/labels.npy"};
  const auto train = usage_error([&] { open_sources(spec); });
  EXPECT_EQ(train.rfind("data.labels: '/no/such/labels.npy' does not exist", 0), 0u) << train;
  spec.labels = {fixture("npz/y.npy")};
  spec.val_path = fixture("npz/x.npy");
  spec.val_labels = "/no/such/val_labels.npy";
  const auto val = usage_error([&] { open_sources(spec); });
  EXPECT_EQ(val.rfind("data.val_labels: '/no/such/val_labels.npy' does not exist", 0), 0u) << val;
}

// Relative data paths start from the current folder, not from the config file: a missing one says
// where it was looked for.
TEST(Sources, AMissingRelativePathSaysWhereItWasLookedFor) {
  for (const std::string source : {"npy", "csv", "image_folder", "cifar10", "mnist"}) {
    SourceSpec spec;
    spec.source = source;
    spec.path = "no-such-folder/data";
    if (source == "npy") spec.labels = {fixture("npz/y.npy")};
    if (source == "csv") spec.labels = {"label"};
    const auto error = usage_error([&] { open_sources(spec); });
    EXPECT_NE(error.find("'no-such-folder/data' does not exist (relative to the current folder " +
                         std::filesystem::current_path().string() + ", not to the config file)"),
              std::string::npos)
        << source << ": " << error;
  }
}

TEST(Sources, LabelsThatAreNoClassIdsNameTheFirstOffender) {
  SourceSpec spec;
  spec.source = "npy";
  spec.path = fixture("npz/x.npy");
  spec.labels = {fixture("bad/negative_labels.npy")};
  const auto negative = usage_error([&] { open_sources(spec); });
  EXPECT_NE(negative.find("a class id is negative (label 4 is -1)"), std::string::npos) << negative;
  spec.labels = {fixture("bad/fractional_labels.npy")};
  const auto fractional = usage_error([&] { open_sources(spec); });
  EXPECT_NE(fractional.find("classification labels are not whole numbers (label 7 is 1.5)"), std::string::npos) << fractional;
  spec.labels = {fixture("bad/one_hot_labels.npy")};
  const auto one_hot = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(one_hot.find("they are one-hot rows of shape [50, 3]\nsave the class ids: y.argmax(1)"), std::string::npos) << one_hot;
  spec.task = "regression";  // as targets, all are fine
  EXPECT_EQ(open_sources(spec).train->size(), 50);
  spec.labels = {fixture("bad/fractional_labels.npy")};
  EXPECT_EQ(open_sources(spec).train->size(), 50);
}

// A large downscale averages instead of skipping pixels: a fine checkerboard becomes flat grey,
// where point sampling would keep whole black or white rows.
TEST(Images, LargeDownscalesAverage) {
  const auto root = std::filesystem::temp_directory_path() / "gputrain-downscale";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "only");
  std::filesystem::copy_file(fixture("images/checker.png"), root / "only" / "checker.png");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.string();
  spec.image_size = {10, 10};  // from 256 x 256: bilinear alone would weigh neighbours 0.7/0.3
  const auto pixels = materialize(*open_sources(spec).train, 1).set.inputs.to(at::kFloat);
  EXPECT_NEAR(pixels.mean().item<float>(), 127.5f, 2.0f);
  EXPECT_LT((pixels - 127.5).abs().max().item<float>(), 20.0f);
}

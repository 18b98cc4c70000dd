// Data sources as a config names them: the format found from the path, arrays by key, the validation
// files found beside the training ones, and errors that name the config key and the file.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/numpy_format.hpp"
#include "gputrain/data/safetensors.hpp"
#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;
using test_support::usage_error;
using test_support::usage_error_and_fix;

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

TEST(Sources, ArraysByKeyAndDefaults) {
  SourceSpec spec;
  spec.source = "npz";
  spec.path = format_fixture("npz/deflated.npz");  // features/labels: found among the usual names
  auto sources = open_sources(spec);
  EXPECT_EQ(sources.train->size(), 50);
  EXPECT_EQ(sources.classes, 3);
  EXPECT_EQ(sources.train->layout().input_shape, (std::vector<std::int64_t>{6}));

  spec.path = format_fixture("npz/custom_keys.npz");
  const auto which = usage_error([&] { open_sources(spec); });
  EXPECT_NE(which.find("which array holds the features? none is named x, features"), std::string::npos) << which;
  spec.features = {"pixels"};
  spec.labels = {"classes"};
  EXPECT_EQ(open_sources(spec).train->size(), 50);

  SourceSpec npy;
  npy.source = "npy";
  npy.path = format_fixture("npz/x.npy");
  npy.labels = {format_fixture("npz/y.npy")};
  npy.val_path = format_fixture("npz/x.npy");
  npy.val_labels = format_fixture("npy/scalar_per_sample.npy");  // 7 labels for 50 samples
  const auto mismatch = usage_error([&] { open_sources(npy); });
  EXPECT_NE(mismatch.find("50 samples of features but 7 labels"), std::string::npos) << mismatch;
  SourceSpec empty;
  empty.source = "npz";
  empty.path = format_fixture("bad/empty.npz");
  const auto none = usage_error([&] { open_sources(empty); });
  EXPECT_NE(none.find("empty.npz': no samples (features of shape [0, 6])"), std::string::npos) << none;

  for (const bool features : {true, false}) {  // a 0-d array, from either side, is named, not indexed
    auto one_value = npy;
    (features ? one_value.val_path : one_value.val_labels) = format_fixture("bad/zero_dim.npy");
    one_value.task = features ? "classification" : "regression";
    const auto message = usage_error([&] { open_sources(one_value); });
    EXPECT_NE(message.find(std::string("the ") + (features ? "features" : "labels") + " are a single value (an array of shape ())"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("zero_dim.npy"), std::string::npos) << message;
  }

  SourceSpec st;
  st.source = "safetensors";
  st.path = format_fixture("safetensors/train.safetensors");
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
  spec.path = format_fixture("mnist");
  auto mnist = open_sources(spec);
  ASSERT_TRUE(mnist.val);
  EXPECT_EQ(mnist.val->size(), 2);
  EXPECT_EQ(mnist.classes, 6);  // labels go up to 5
  spec.source = "cifar10";
  spec.path = format_fixture("cifar");
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
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {{"csv", format_fixture("npz/x.npy"), "npy"},
                                                                                {"safetensors", format_fixture("csv/iris.csv"), "csv"},
                                                                                {"npy", format_fixture("npz/stored.npz"), "npz"}};
  for (const auto& [source, path, named] : cases) {
    SourceSpec spec;
    spec.source = source;
    spec.path = path;
    spec.labels = {source == "npy" ? format_fixture("npz/y.npy") : "species"};
    const auto message = test_support::usage_error_and_fix([&] { open_sources(spec); });
    EXPECT_NE(message.find("\ndata.source is " + source + ", but '" + path + "' looks like " + named + " data: set data.source: " + named),
              std::string::npos)
        << message;
  }
}

TEST(Sources, ErrorsInTheValidationDataNameDataValPath) {
  const std::vector<std::pair<std::string, std::string>> sources = {
      {"image_folder", format_fixture("folder/train")}, {"cifar10", format_fixture("cifar")}, {"mnist", format_fixture("mnist")}};
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
  spec.path = format_fixture("npz/x.npy");
  spec.labels = {"/no/such/labels.npy"};
  const auto train = usage_error([&] { open_sources(spec); });
  EXPECT_EQ(train.rfind("data.labels: '/no/such/labels.npy' does not exist", 0), 0u) << train;
  spec.labels = {format_fixture("npz/y.npy")};
  spec.val_path = format_fixture("npz/x.npy");
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
    if (source == "npy") spec.labels = {format_fixture("npz/y.npy")};
    if (source == "csv") spec.labels = {"label"};
    const auto error = usage_error([&] { open_sources(spec); });
    EXPECT_NE(error.find("'no-such-folder/data' does not exist (relative to the current folder " +
                         std::filesystem::current_path().string() + ", not to the config file)"),
              std::string::npos)
        << source << ": " << error;
  }
}

// A name past the file system's 255 bytes is not said "does not exist", which reads as a typo.
TEST(Sources, ANamePastTheFileSystemsLimitIsSaidWithItsLength) {
  for (const std::string source : {"npy", "csv"}) {
    SourceSpec spec;
    spec.source = source;
    spec.path = std::string(300, 'a') + ".csv";
    spec.labels = {source == "npy" ? format_fixture("npz/y.npy") : "label"};
    const auto error = usage_error([&] { open_sources(spec); });
    EXPECT_NE(error.find("cannot be opened: the name 'aaaaaaaaaaaaaaaaaaaaaaaa...' in it is 304 bytes long, over the 255 its file "
                         "system takes"),
              std::string::npos)
        << source << ": " << error;
  }
}

TEST(Sources, LabelsThatAreNoClassIdsNameTheFirstOffender) {
  SourceSpec spec;
  spec.source = "npy";
  spec.path = format_fixture("npz/x.npy");
  const auto refusal = [&](const std::string& labels) {  // the message, then its fix
    spec.labels = {format_fixture("bad/" + labels)};
    return usage_error_and_fix([&] { open_sources(spec); });
  };
  const auto negative = refusal("negative_labels.npy");
  EXPECT_NE(negative.find("a class id is negative (label 4 is -1)"), std::string::npos) << negative;
  const auto fractional = refusal("fractional_labels.npy");
  EXPECT_NE(fractional.find("classification labels are not whole numbers (label 7 is 1.5)"), std::string::npos) << fractional;
  const auto one_hot = refusal("one_hot_labels.npy");
  EXPECT_NE(one_hot.find("they are one-hot rows of shape [50, 3]\nsave the class ids: y.argmax(1)"), std::string::npos) << one_hot;
  // A missing label (nan, as pandas writes one) or an infinite one was converted to class id
  // -9223372036854775808 and named as negative; one beyond int64 converted to another.
  const auto missing = refusal("missing_labels.npy");
  EXPECT_NE(missing.find("a label is missing (label 2 is nan; 2 of the 50 labels are nan or inf)\nkeep the samples that have a label: "
                         "keep = numpy.isfinite(y); X, y = X[keep], y[keep]"),
            std::string::npos)
      << missing;
  const auto infinite = refusal("infinite_labels.npy");
  EXPECT_NE(infinite.find("a label is infinite (label 1 is inf, the only one)"), std::string::npos) << infinite;
  const auto beyond = refusal("huge_labels.npy");
  EXPECT_NE(beyond.find("a label is beyond any class id (label 1 is 1e+30)"), std::string::npos) << beyond;
  spec.task = "regression";  // as targets, all are fine
  EXPECT_EQ(open_sources(spec).train->size(), 50);
  spec.labels = {format_fixture("bad/fractional_labels.npy")};
  EXPECT_EQ(open_sources(spec).train->size(), 50);
}

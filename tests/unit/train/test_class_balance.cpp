// What classification labels say before training: the val accuracy of always answering the most
// common class, labels of one class or one per sample, classes only validation has, ids no label uses.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/sources.hpp"
#include "support/usage_errors.hpp"
#include "train/data_checks/class_balance.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

std::shared_ptr<const data::Dataset> labelled_arrays(const at::Tensor& labels) {
  return data::make_array_dataset({at::zeros({labels.size(0), 2}), labels}, "arrays", "arrays");
}

// A set that knows its labels without holding its samples, as an image folder does (its folders).
class LabelsOnly final : public data::Dataset {
 public:
  explicit LabelsOnly(at::Tensor labels) : labels_(std::move(labels)) { layout_.input_shape = {3, 8, 8}; }
  std::int64_t size() const override { return labels_.size(0); }
  const data::SampleLayout& layout() const override { return layout_; }
  void read(std::int64_t, void*, void*) const override { ADD_FAILURE() << "the note decoded a sample"; }
  std::string origin(std::int64_t index) const override { return "image " + std::to_string(index); }
  std::optional<at::Tensor> class_ids() const override { return labels_; }
  std::string description() const override { return "images"; }

 private:
  at::Tensor labels_;
  data::SampleLayout layout_;
};

// `first` samples of class 0 and `second` of class 1.
at::Tensor two_classes(std::int64_t first, std::int64_t second) {
  return at::cat({at::zeros({first}, at::kLong), at::ones({second}, at::kLong)});
}

}  // namespace

TEST(ClassBalance, TheMostCommonClassIsNamedWithItsShareOfTheValidationSamples) {
  data::Sources sources;
  sources.train = labelled_arrays(two_classes(10, 10));
  sources.val = labelled_arrays(two_classes(5, 95));
  sources.class_names = {"churn", "stay"};
  EXPECT_EQ(class_balance_note(sources, 2, false),
            "classes are unbalanced: the most common, 'stay' (class 1), is 95.0 % of the validation samples (95 of 100), "
            "the val accuracy of always answering it; the balanced accuracy (each class's accuracy, averaged) shows what the rarer "
            "classes get, and train.class_weights: balanced weighs them up in the training loss");
  // A run that weighs the classes already is not told to.
  EXPECT_EQ(class_balance_note(sources, 2, true),
            "classes are unbalanced: the most common, 'stay' (class 1), is 95.0 % of the validation samples (95 of 100), "
            "the val accuracy of always answering it; the balanced accuracy (each class's accuracy, averaged) shows what the rarer "
            "classes get");
  // Without validation data, the training samples' and how to get a balanced accuracy; without names, the id.
  sources.val = nullptr;
  sources.class_names.clear();
  sources.train = labelled_arrays(two_classes(80, 20));
  EXPECT_EQ(
      class_balance_note(sources, 2, false),
      "classes are unbalanced: the most common, class 0, is 80.0 % of the training samples (80 of 100), "
      "the accuracy of always answering it; hold some out (data.val_fraction: 0.2) to see the balanced accuracy (each "
      "class's accuracy, averaged), what the rarer classes get, and train.class_weights: balanced weighs them up in the training loss");
}

TEST(ClassBalance, NothingIsSaidOfANearlyEvenSplit) {
  data::Sources sources;
  sources.train = labelled_arrays(two_classes(60, 40));  // 60 % < 1.5 x 50 %
  EXPECT_EQ(class_balance_note(sources, 2, false), "");
  // Ten classes: 14 % of the samples in one is under 1.5 x 10 %; 15 % is not.
  sources.train =
      labelled_arrays(at::cat({at::zeros({14}, at::kLong), at::arange(1, 10, at::kLong).repeat_interleave(86 / 9 + 1).slice(0, 0, 86)}));
  EXPECT_EQ(class_balance_note(sources, 10, false), "");
  sources.train =
      labelled_arrays(at::cat({at::zeros({15}, at::kLong), at::arange(1, 10, at::kLong).repeat_interleave(10).slice(0, 0, 85)}));
  EXPECT_NE(class_balance_note(sources, 10, false).find("class 0, is 15.0 %"), std::string::npos);
}

TEST(ClassBalance, ASetOfFilesIsJudgedByTheLabelsItKnowsWithoutReadingThem) {
  data::Sources sources;
  sources.train = std::make_shared<LabelsOnly>(two_classes(90, 10));
  EXPECT_NE(class_balance_note(sources, 2, false).find("class 0, is 90.0 % of the training samples (90 of 100)"), std::string::npos);
}

// An id column given as the labels (a class per row) is refused before a model with an output
// unit per sample is built; many classes of a few samples each are not.
TEST(ClassBalance, LabelsThatNameEachSampleAreRefused) {
  data::Sources sources;
  sources.train = labelled_arrays(at::arange(2000, at::kLong));
  data::SourceSpec spec;
  spec.source = "csv";
  const auto error = test_support::usage_error_and_fix([&] { refuse_identifier_labels(sources, spec); });
  EXPECT_NE(error.find("the labels of arrays name samples, not classes: 2000 classes among 2000 training samples, 2000 of them on one "
                       "sample only"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("\ncheck that data.labels names the column to predict"), std::string::npos) << error;
  sources.train = labelled_arrays(at::arange(4000, at::kLong).floor_divide(2));  // 2000 classes of two samples
  EXPECT_NO_THROW(refuse_identifier_labels(sources, spec));
  sources.train = labelled_arrays(at::arange(900, at::kLong));  // a few hundred one-sample classes: too few to say
  EXPECT_NO_THROW(refuse_identifier_labels(sources, spec));
}

// Training labels of one class leave a classifier nothing to learn: refused, naming the class and
// where to look for the mistake.
TEST(ClassBalance, TrainingLabelsOfOneClassAreRefused) {
  data::Sources sources;
  sources.train = labelled_arrays(at::full({5}, 1, at::kLong));
  sources.class_names = {"cat", "dog"};
  data::SourceSpec spec;
  spec.source = "csv";
  try {
    refuse_single_class(sources, spec);
    ADD_FAILURE() << "one class was trained on";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the training labels are all class 1 ('dog'): a classifier learns nothing from one class"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("; data: arrays"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("data.labels names the label column"), std::string::npos) << e.remedy();
  }
  sources.train = std::make_shared<LabelsOnly>(at::zeros({4}, at::kLong));  // an image folder of one class folder
  spec.source = "image_folder";
  spec.path = "photos/train";
  try {
    refuse_single_class(sources, spec);
    ADD_FAILURE() << "one class folder was trained on";
  } catch (const UsageError& e) {
    EXPECT_NE(e.remedy().find("give each class a sub-folder of its own images in photos/train"), std::string::npos) << e.remedy();
  }
  sources.train = labelled_arrays(two_classes(99, 1));
  EXPECT_NO_THROW(refuse_single_class(sources, spec));
}

// A small file whose rarer classes all landed in the hold-out: the split is named, not the file.
TEST(ClassBalance, AHoldOutThatTookEveryOtherClassIsNamed) {
  data::Sources sources;
  sources.train = labelled_arrays(at::zeros({4}, at::kLong));
  sources.val = labelled_arrays(at::ones({1}, at::kLong));
  data::SourceSpec spec;
  spec.source = "csv";
  spec.val_fraction = 0.2;
  try {
    refuse_single_class(sources, spec);
    ADD_FAILURE() << "one class was trained on";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("holding out data.val_fraction 0.2 took every sample of the other classes"), std::string::npos)
        << e.what();
    EXPECT_NE(e.remedy().find("a smaller data.val_fraction"), std::string::npos) << e.remedy();
  }
  spec.val_fraction = 0;  // a validation file of its own: the training file is what is wrong
  spec.val_path = "val.csv";
  try {
    refuse_single_class(sources, spec);
    ADD_FAILURE() << "one class was trained on";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("holding out"), std::string::npos) << e.what();
  }
}

// Validation classes no training label has cannot be answered: named with their samples' count.
TEST(ClassBalance, ValidationClassesNoTrainingLabelHasAreNamed) {
  data::Sources sources;
  sources.train = labelled_arrays(two_classes(10, 10));
  sources.val = labelled_arrays(at::tensor({0, 1, 2, 2, 3}, at::kLong));
  sources.class_names = {"a", "b", "c", "d"};
  EXPECT_EQ(unseen_classes_note(sources, 4),
            "note: the validation labels hold classes 2 ('c'), 3 ('d'), which no training label has (3 validation samples of 5): the model "
            "cannot learn to answer them, so those samples count as errors");
  sources.val = labelled_arrays(two_classes(3, 1));
  EXPECT_EQ(unseen_classes_note(sources, 4), "");
  sources.val = nullptr;
  EXPECT_EQ(unseen_classes_note(sources, 4), "");
}

// Labels numbered from 1 (R, MATLAB, star ratings) make an output for class 0 that no sample
// trains, and a gap in numeric ids one per missing id: said before training, with the fix. Class
// names are numbered densely and never get the line.
TEST(ClassBalance, ClassIdsNoLabelUsesAreNamedAndLabelsFromOneGetTheirFix) {
  data::Sources sources;
  sources.train = labelled_arrays(at::tensor({1, 2, 3, 3}, at::kLong));
  EXPECT_EQ(empty_class_ids_note(sources),
            "note: no label is class 0: the labels run from 1 to 3, as R, MATLAB and many datasets number classes, so the model gets 4 "
            "outputs for 3 classes, one of which no sample trains; to number them from 0, save the labels minus 1 (y - 1)");
  sources.train = labelled_arrays(at::tensor({0, 1, 4, 4}, at::kLong));
  sources.val = labelled_arrays(at::tensor({2}, at::kLong));  // a class only the validation labels hold has a sample
  EXPECT_EQ(empty_class_ids_note(sources),
            "note: class 3 has no sample among the labels, which run from 0 to 4: the model gets 5 outputs for 4 classes, one of which no "
            "sample trains; labels that are codes rather than class ids become ids 0, 1, 2, ... with numpy.unique(y, return_inverse=True)");
  sources.val = nullptr;
  sources.train = labelled_arrays(at::tensor({0, 9}, at::kLong));
  EXPECT_NE(
      empty_class_ids_note(sources).find("note: classes 1, 2, 3, 4, 5 and 3 more have no sample among the labels, which run from 0 to "
                                         "9: the model gets 10 outputs for 2 classes, 8 of which no sample trains"),
      std::string::npos);
  sources.train = labelled_arrays(two_classes(3, 3));
  EXPECT_EQ(empty_class_ids_note(sources), "");
  sources.train = labelled_arrays(at::tensor({1, 2}, at::kLong));
  sources.class_names = {"a", "b", "c"};
  EXPECT_EQ(empty_class_ids_note(sources), "");
}

// A data.classes far past the labels (a mistyped 1000000000) made each note count 8 GB of classes
// before the model refused the size; the notes count the labels' span, whatever data.classes says.
TEST(ClassBalance, TheNotesCountTheLabelsNotTheClassesDataClassesGives) {
  constexpr std::int64_t kClasses = std::int64_t{1} << 50;  // 8 PiB of counts, were they made
  data::Sources sources;
  sources.train = labelled_arrays(two_classes(90, 10));
  sources.val = labelled_arrays(at::tensor({0, 1, 2}, at::kLong));
  EXPECT_NE(class_balance_note(sources, kClasses, false).find("the most common, class 0"), std::string::npos);
  EXPECT_NE(unseen_classes_note(sources, kClasses).find("the validation labels hold class 2,"), std::string::npos);
}

// Names a spreadsheet's typing made twice ("Cat" and "cat", a doubled space) are named, since they
// train as classes of their own; names that differ otherwise are not.
TEST(ClassBalance, ClassNamesThatDifferOnlyInCaseOrSpacingAreNamed) {
  EXPECT_EQ(look_alike_classes_note({"Cat", "New  York", "New York", "cat", "dog"}),
            "class names 'Cat' and 'cat'; 'New  York' and 'New York' each differ only in letter case or spacing, and train as classes of "
            "their own: if they are one class, write them alike in the labels");
  EXPECT_EQ(look_alike_classes_note({"cat", "cats", "dog"}), "");
  EXPECT_EQ(look_alike_classes_note({}), "");
}

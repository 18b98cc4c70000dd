// Image folders as torchvision's ImageFolder reads them: one sub-folder per class, linked folders,
// lost+found, files of other formats, and every folder or file it cannot use named.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "gputrain/data/sources.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"

using namespace gputrain;
using namespace gputrain::data;
using test_support::format_fixture;
using test_support::usage_error;
using test_support::usage_error_and_fix;

TEST(ImageFolder, ListsClassesSkipsCorruptFilesAndResizes) {
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = format_fixture("folder/train");
  spec.val_path = format_fixture("folder/val");
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
                             format_fixture("folder/train") + "/dog/README.txt': only .jpg, .jpeg and .png are)"),
            std::string::npos)
      << description;
  EXPECT_EQ(sources.val->description().find("not read"), std::string::npos) << sources.val->description();
  ASSERT_EQ(sources.notes.size(), 1U);
  EXPECT_EQ(sources.notes[0],
            "2 images in " + format_fixture("folder/train") +
                " are .bmp or .webp, which gputrain does not decode, so they are not trained on; Pillow writes a .png beside "
                "each: python3 -c \"import pathlib, PIL.Image as I; [I.open(p).convert('RGB').save(p.with_suffix('.png')) for "
                "p in pathlib.Path('" +
                format_fixture("folder/train") + "').rglob('*') if p.suffix.lower() in ('.bmp', '.webp')]\"");
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
  spec.val_path = format_fixture("folder/train") + "/";
  const auto both = open_sources(spec);
  ASSERT_EQ(both.notes.size(), 2U);
  EXPECT_NE(both.notes[0].find("so they are not trained or validated on; Pillow"), std::string::npos) << both.notes[0];
  // Validating on the training samples is said too: its figures flatter the model.
  EXPECT_NE(both.notes[1].find("note: data.val_path is data.path itself, so validation measures the samples the model learns from"),
            std::string::npos)
      << both.notes[1];
  spec.val_path = format_fixture("folder/val");
  for (const auto& note : open_sources(spec).notes) EXPECT_EQ(note.find("data.val_path is data.path itself"), std::string::npos) << note;
}

// A validation class folder the training folder lacks is refused, with its near miss and the
// training classes: the model has no output for it.
TEST(ImageFolder, AValidationClassTheTrainingFolderLacksIsNamedWithItsNearMiss) {
  const auto val = std::filesystem::temp_directory_path() / "gputrain-val-misspelt-class";
  std::filesystem::remove_all(val);
  for (const std::string name : {"cat", "dgo"}) {
    std::filesystem::create_directories(val / name);
    std::filesystem::copy_file(format_fixture("images/checker.png"), val / name / "0.png");
  }
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = format_fixture("folder/train");
  spec.val_path = val.string();
  spec.image_size = {12, 10};
  const auto error = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("'" + (val / "dgo").string() + "' is a class the training folder does not have; did you mean 'dog'?"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("the model learns the training folder's classes only (cat, dog)"), std::string::npos) << error;
  std::filesystem::remove_all(val);
}

// A class folder copied from a Mac is named in decomposed Unicode ('cafe' and U+0301), one made
// on Linux composed (U+00E9): one class. Both forms in one folder would be two that print alike.
TEST(ImageFolder, OneNameInTwoUnicodeFormsIsOneClass) {
  const test_support::ScratchFolder scratch("unicode-forms");
  const auto root = std::filesystem::path(scratch.path);
  const std::string decomposed = "cafe\xcc\x81", composed = "caf\xc3\xa9";
  const auto add_image = [&](const std::filesystem::path& folder, const std::string& image) {
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(format_fixture("images/checker.png"), folder / image);
  };
  for (const std::string& name : {decomposed, std::string("tea")}) add_image(root / "train" / name, "0.png");
  add_image(root / "val" / composed, "0.png");
  add_image(root / "val" / "tea", "0.png");
  add_image(root / "val" / "tea", "1.png");
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = (root / "train").string();
  spec.val_path = (root / "val").string();
  spec.image_size = {12, 10};
  const auto sources = open_sources(spec);
  EXPECT_EQ(sources.class_names, (std::vector<std::string>{decomposed, "tea"}));
  const auto ids = sources.val->class_ids();
  ASSERT_TRUE(ids.has_value());
  EXPECT_TRUE(at::equal(*ids, at::tensor({0, 1, 1}, at::kLong))) << *ids;

  add_image(root / "train" / composed, "0.png");
  const auto error = usage_error([&] { open_sources(spec); });
  EXPECT_NE(error.find("are one name in two Unicode forms (the first decomposed, as macOS writes names)"), std::string::npos) << error;
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

TEST(ImageFolder, AClassFolderWithoutImagesIsAnError) {
  test_support::ScratchFolder root("empty-class");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
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
  spec.path = format_fixture("folder/train");
  spec.val_path = root.path.string();
  EXPECT_EQ(open_sources(spec).val->size(), 1);
}

// A run whose logging.dir was inside the images left a folder the next run read as a class: named
// as a gputrain run, to be moved out, not as a class to add images to.
TEST(ImageFolder, ARunFolderInsideTheImagesIsNamedAsARun) {
  test_support::ScratchFolder root("run-in-images");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  std::filesystem::create_directories(root.path / "runs" / "a" / "checkpoints");
  std::ofstream(root.path / "runs" / "a" / ".gputrain.lock") << "123";
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  const auto error = usage_error_and_fix([&] { open_sources(spec); });
  EXPECT_NE(error.find("class 'runs' has no images: '" + (root.path / "runs").string() + "' holds a gputrain run ('" +
                       (root.path / "runs" / "a").string() + "')"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("give runs a logging.dir outside it"), std::string::npos) << error;
}

// JPEG as Windows and browsers also name it (Chrome's "Save image as" writes .jfif): read as JPEG.
TEST(ImageFolder, JpegUnderItsOtherNamesIsRead) {
  test_support::ScratchFolder root("jfif");
  for (const auto* name : {"cat/0.jfif", "cat/1.JPE", "dog/0.jpg"}) {
    std::filesystem::create_directories((root.path / name).parent_path());
    std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / name);
  }
  SourceSpec spec;
  spec.source = "image_folder";
  spec.path = root.path.string();
  spec.image_size = {12, 10};
  const auto sources = open_sources(spec);
  ASSERT_EQ(sources.train->size(), 3);
  const auto loaded = materialize(*sources.train, 1);
  EXPECT_TRUE(loaded.skipped.empty());
  EXPECT_EQ(loaded.set.size(), 3);
}

// An image directly in the root has no class: left out and said so, apart from files of other
// formats; a root of images alone says where they belong.
TEST(ImageFolder, ImagesOutsideTheClassFoldersAreNamedAsSuch) {
  test_support::ScratchFolder root("outside-classes");
  std::filesystem::create_directories(root.path / "cat");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.png"), root.path / "stray.png");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "also.jpg");
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
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
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
  for (const char* name : {"0.jpg", "1.jpg"}) std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), images / name);
  const auto train = root.path / "train";
  std::filesystem::create_directories(train / "cat");
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), train / "cat" / "own.jpg");
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
  std::filesystem::copy_file(format_fixture("images/exact/rgb.jpg"), root.path / "cat" / "0.jpg");
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

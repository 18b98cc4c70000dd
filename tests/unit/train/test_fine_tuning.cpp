// Fine-tuning (#50): weights matched to a model by name after a wrapper's prefix, a new head for
// another number of classes, partial loads, and train.freeze.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>

#include <limits>
#include <string>

#include "gputrain/data/safetensors.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/model_registry.hpp"
#include "support/scratch_folder.hpp"
#include "support/test_paths.hpp"
#include "support/usage_errors.hpp"
#include "train/models/frozen_model.hpp"
#include "train/models/state_dict_file.hpp"
#include "train/models/state_dict_pickle.hpp"
#include "train/models/weight_matching.hpp"
#include "train/setup/init_weights.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

std::unique_ptr<Model> resnet(std::int64_t outputs) {
  ModelSpec spec;
  spec.config.name = "resnet18";
  spec.input_shape = {3, 8, 8};
  spec.outputs = outputs;
  return build_model(spec);
}

at::Tensor state_of(Model& model, const std::string& name) {
  for (const auto& [n, t] : model.named_state())
    if (n == name) return t;
  return {};
}

// model.init_weights: `file` (written from `from`'s state under `prefix`), into a resnet18 of `outputs`.
std::vector<std::string> init_from(Model& from, Model& into, std::int64_t outputs, const std::string& prefix, bool strict = true) {
  test_support::ScratchFolder folder("fine-tuning");
  NamedTensors state;
  for (const auto& [name, tensor] : from.named_state()) state.emplace_back(prefix + name, tensor);
  const auto path = (folder.path / "w.safetensors").string();
  data::write_safetensors(path, state);
  Config config;
  config.model.name = "resnet18";
  config.model.init_weights = path;
  config.model.init_strict = strict;
  return load_init_weights(into, config, outputs);
}

}  // namespace

TEST(WeightMatching, AWrappersPrefixIsReadOffAndTheRestIsSorted) {
  const NamedTensors model{{"a.weight", at::zeros({2, 3})}, {"b.weight", at::zeros({4})}, {"c.bias", at::zeros({1})}};
  const NamedTensors file{{"module.a.weight", at::ones({2, 3})}, {"module.b.weight", at::ones({5})}, {"module.d", at::ones({1})}};
  const auto match = match_weights(model, file);
  EXPECT_EQ(match.prefix, "module.");
  ASSERT_EQ(match.fits.size(), 1U);
  EXPECT_EQ(match.fits[0].first, "a.weight");
  ASSERT_EQ(match.misfits.size(), 1U);
  EXPECT_EQ(match.misfits[0].name, "b.weight");
  EXPECT_EQ(shape_text(match.misfits[0].in_file), "[5]");
  EXPECT_EQ(match.missing, std::vector<std::string>{"c.bias"});
  EXPECT_EQ(match.extra, std::vector<std::string>{"module.d"});
}

TEST(WeightMatching, TheHeadIsTheLastLayerOfTheOutputsRows) {
  auto model = resnet(3);
  EXPECT_EQ(head_names(model->named_state(), 3), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  EXPECT_TRUE(head_names(model->named_state(), 7).empty());
}

// torchvision's 1000-class weights on a 3-class folder: the head starts anew, the rest is the file's.
TEST(FineTuning, OnlyAnotherNumberOfClassesGetsANewHeadAndTheRestLoads) {
  auto pretrained = resnet(10);
  auto model = resnet(3);
  const auto head_before = state_of(*model, "fc.weight").clone();
  const auto notes = init_from(*pretrained, *model, 3, "module.");
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_NE(notes[0].find("its names carry the prefix 'module.' (a wrapper's); read without it"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("the classifier head fc.weight ([10, 512] in the file, [3, 512] here), fc.bias ([10] in the file, [3] here) "
                          "starts from random weights for this run's 3 outputs"),
            std::string::npos)
      << notes[1];
  EXPECT_TRUE(at::equal(state_of(*model, "layer4.1.conv2.weight"), state_of(*pretrained, "layer4.1.conv2.weight")));
  EXPECT_TRUE(at::equal(state_of(*model, "bn1.running_var"), state_of(*pretrained, "bn1.running_var")));
  EXPECT_TRUE(at::equal(state_of(*model, "fc.weight"), head_before));
}

TEST(FineTuning, OtherMisfitsAreRefusedUnlessInitStrictIsOff) {
  ModelSpec spec;
  spec.config.name = "resnet18";
  spec.input_shape = {1, 8, 8};  // grey images: conv1 takes one channel, not three
  spec.outputs = 3;
  auto grey = build_model(spec);
  auto model = resnet(3);
  const auto refused = test_support::usage_error_and_fix([&] { init_from(*grey, *model, 3, ""); });
  EXPECT_NE(refused.find("tensor 'conv1.weight' has shape [64, 1, 3, 3]"), std::string::npos) << refused;
  EXPECT_NE(refused.find("model.init_strict: false"), std::string::npos) << refused;
  const auto notes = init_from(*grey, *model, 3, "", /*strict=*/false);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("tensors loaded; the rest keep their random start (model.init_strict: false)\n  shaped otherwise in the file: "
                          "conv1.weight ([64, 1, 3, 3] in the file, [64, 3, 3, 3] here)"),
            std::string::npos)
      << notes[0];
  EXPECT_TRUE(at::equal(state_of(*model, "layer1.0.conv1.weight"), state_of(*grey, "layer1.0.conv1.weight")));
}

// A diverged run's weights saved as a start: named by tensor before training, not a nan at step 1.
TEST(FineTuning, WeightsHoldingNanOrInfAreRefusedByName) {
  auto diverged = resnet(3);
  {
    c10::NoGradGuard no_grad;
    state_of(*diverged, "layer2.0.bn1.running_var")[5] = std::numeric_limits<float>::infinity();
  }
  auto model = resnet(3);
  const auto before = state_of(*model, "conv1.weight").clone();
  const auto refused = test_support::usage_error_and_fix([&] { init_from(*diverged, *model, 3, "module."); });
  EXPECT_NE(refused.find("model.init_weights ("), std::string::npos) << refused;
  EXPECT_NE(refused.find("layer2.0.bn1.running_var holds NaN or inf in 1 of its 128 values, which no training step repairs"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("start from weights saved before the run that wrote them diverged"), std::string::npos) << refused;
  EXPECT_TRUE(at::equal(state_of(*model, "conv1.weight"), before));  // nothing loaded
  EXPECT_EQ(nonfinite_tensor({{"steps", at::full({2}, 3, at::kLong)}, {"w", at::ones({4})}}), std::nullopt);
  const auto nan = at::full({4}, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(nonfinite_tensor({{"w", at::ones({4})}, {"b", nan}}), "b holds NaN or inf in 4 of its 4 values");
}

// Weights whose values a copy would change in kind: complex ones (the imaginary part dropped, as
// PyTorch's load_state_dict does with a warning) and true/false ones; refused before anything loads.
TEST(FineTuning, ComplexOrTrueFalseWeightsAreRefusedByName) {
  struct Linear0 : torch::nn::Module {
    Linear0() { register_module("0", torch::nn::Linear(3, 2)); }
    at::Tensor forward(const at::Tensor& x) { return x; }
  };
  register_model("linear0", [](const ModelSpec&) { return torch::nn::AnyModule(Linear0()); });
  ModelSpec spec;
  spec.config.name = "linear0";
  spec.input_shape = {3};
  auto model = build_model(spec);
  Config config;
  config.model.name = "linear0";
  config.model.init_strict = false;  // the fixture's batch norm tensors are not this model's
  config.model.init_weights = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/complex.pth";
  const auto complex = test_support::usage_error_and_fix([&] { load_init_weights(*model, config, 2); });
  EXPECT_NE(
      complex.find("0.weight holds complex values, which the model's real 0.weight cannot take without dropping their imaginary parts"),
      std::string::npos)
      << complex;
  EXPECT_NE(complex.find("v.real if v.is_complex() else v"), std::string::npos) << complex;

  test_support::ScratchFolder folder("bool-weights");
  config.model.init_weights = (folder.path / "mask.safetensors").string();
  data::write_safetensors(config.model.init_weights, {{"0.weight", at::ones({2, 3}, at::kBool)}, {"0.bias", at::zeros({2})}});
  const auto before = state_of(*model, "0.bias").clone();
  const auto mask = test_support::usage_error([&] { load_init_weights(*model, config, 2); });
  EXPECT_NE(mask.find("0.weight holds true/false values (a mask?), which the model's 0.weight would read as 0 and 1"), std::string::npos)
      << mask;
  EXPECT_TRUE(at::equal(state_of(*model, "0.bias"), before));  // nothing loaded
}

TEST(Freeze, FrozenParametersLeaveTheOptimizersListAndTheirBatchNormStaysInEvalMode) {
  std::string note;
  auto model = freeze_parameters(resnet(3), {"conv1", "bn1", "layer1"}, note);
  EXPECT_NE(note.find("train.freeze: conv1, bn1, layer1: "), std::string::npos) << note;
  EXPECT_NE(note.find("5 batch norms under them kept in eval mode"), std::string::npos) << note;
  for (const auto& p : model->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_FALSE(state_of(*model, "layer1.0.conv1.weight").requires_grad());
  EXPECT_TRUE(state_of(*model, "layer2.0.conv1.weight").requires_grad());
  const auto frozen_mean = state_of(*model, "layer1.0.bn1.running_mean").clone();
  const auto trained_mean = state_of(*model, "layer2.0.bn1.running_mean").clone();
  model->set_training(true);
  model->forward(at::randn({4, 3, 8, 8}));
  EXPECT_TRUE(at::equal(state_of(*model, "layer1.0.bn1.running_mean"), frozen_mean));
  EXPECT_FALSE(at::equal(state_of(*model, "layer2.0.bn1.running_mean"), trained_mean));
}

TEST(Freeze, APrefixIsAWholeNameComponentAndMustNameAParameter) {
  std::string note;
  const auto message = test_support::usage_error_and_fix([&] { freeze_parameters(resnet(3), {"layer"}, note); });
  EXPECT_NE(message.find("train.freeze: 'layer' names no parameter of model resnet18"), std::string::npos) << message;
  const auto all = test_support::usage_error([&] {
    freeze_parameters(resnet(3), {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4", "fc"}, note);
  });
  EXPECT_NE(all.find("freezes every parameter of model resnet18: nothing would train"), std::string::npos) << all;
}

// torch.save's state_dict is an OrderedDict with _metadata, which LibTorch's unpickler alone reads
// as None; a training script's checkpoint holds one under "state_dict".
TEST(TorchSaveFiles, AStateDictAndACheckpointHoldingOneAreRead) {
  const std::string fixtures = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/";
  ASSERT_TRUE(is_torch_save_archive(fixtures + "state_dict.pth"));
  const auto state = read_torch_save_state(fixtures + "state_dict.pth", "model.init_weights");
  std::vector<std::string> names;
  for (const auto& [name, tensor] : state) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                             "1.num_batches_tracked"}));
  EXPECT_EQ(state[0].second.sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(at::equal(state[5].second, at::ones({2})));  // running_var starts at 1
  const auto held = read_torch_save_state(fixtures + "lightning.ckpt", "model.init_weights");
  ASSERT_EQ(held.size(), 7U);
  EXPECT_EQ(held[0].first, "model.0.weight");
  EXPECT_FALSE(is_torch_save_archive(fixtures + "weights.safetensors"));
}

// LibTorch's unpickler makes room for every memo slot up to a PUT's: a 1 kB file whose pickle
// says LONG_BINPUT 1,734,241,634 made it ask for 27 GB (std::bad_alloc, or the OOM killer). Found
// by the checkpoint fuzz target. Refused as damaged before LibTorch reads it.
TEST(TorchSaveFiles, AMemoSlotPastThePickleIsRefusedBeforeLibTorchMakesRoomForIt) {
  const std::string path = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/memo_slot_past_the_pickle.pth";
  const auto message = test_support::usage_error([&] { read_torch_save_state(path, "model.init_weights"); });
  EXPECT_NE(message.find("is a torch.save file LibTorch cannot unpickle: its pickle is damaged"), std::string::npos) << message;
  unsigned char unknown = 0;
  const std::string far("\x80\x02}r\x62\x6d\x5f\x67.", 9), near("\x80\x02}r\x00\x00\x00\x00.", 9);
  EXPECT_FALSE(ordered_dicts_as_dicts(far, &unknown));
  EXPECT_EQ(unknown, 0) << "a damaged pickle, not another protocol's opcode";
  EXPECT_EQ(ordered_dicts_as_dicts(near, &unknown), near);
}

TEST(TorchSaveFiles, APickleProtocolAboveTwoIsRefusedWithTheFix) {
  const std::string path = std::string(gputrain::test_support::format_fixtures_dir()) + "/checkpoints/protocol4.pth";
  const auto message = test_support::usage_error_and_fix([&] { read_torch_save_state(path, "model.init_weights"); });
  EXPECT_NE(message.find("of a pickle protocol above torch.save's default (2)"), std::string::npos) << message;
  EXPECT_NE(message.find("torch.save(model.state_dict(), 'w.pth')"), std::string::npos) << message;
}

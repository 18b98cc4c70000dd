#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <set>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/device/system_info.hpp"
#include "gputrain/memory/cpu_allocator.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"

using namespace gputrain;
using namespace gputrain::train;

namespace {

ModelSpec spec(const std::string& name, std::vector<std::int64_t> shape, std::int64_t outputs = 10) {
  ModelSpec s;
  s.config.name = name;
  s.input_shape = std::move(shape);
  s.outputs = outputs;
  return s;
}

std::set<std::string> names(Model& model) {
  std::set<std::string> out;
  for (const auto& [name, tensor] : model.named_state()) out.insert(name);
  return out;
}

}  // namespace

TEST(Models, BuiltInsAreRegistered) {
  const auto all = registered_models();
  for (const char* name : {"mlp", "small_cnn", "resnet18", "resnet34", "resnet50", "transformer"})
    EXPECT_NE(std::find(all.begin(), all.end(), name), all.end()) << name;
}

TEST(Models, EachBuiltInMapsABatchToOutputs) {
  struct Case {
    std::string name;
    std::vector<std::int64_t> shape;
  };
  for (const auto& c : std::vector<Case>{{"mlp", {12}},
                                         {"small_cnn", {3, 16, 16}},
                                         {"resnet18", {3, 16, 16}},
                                         {"resnet34", {1, 16, 16}},
                                         {"resnet50", {3, 32, 32}},
                                         {"transformer", {6, 5}}}) {
    auto model = build_model(spec(c.name, c.shape, 7));
    std::vector<std::int64_t> batch{3};
    batch.insert(batch.end(), c.shape.begin(), c.shape.end());
    model->set_training(false);
    const auto out = model->forward(at::randn(batch));
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{3, 7})) << c.name;
    EXPECT_EQ(model->name(), c.name);
  }
}

// The same parameter counts and state_dict names as torchvision's models.
TEST(Models, ResNetsMatchTorchvision) {
  auto s = spec("resnet18", {3, 224, 224}, 1000);
  s.config.stem = "imagenet";
  auto r18 = build_model(s);
  EXPECT_EQ(parameter_count(*r18), 11689512);
  const auto keys = names(*r18);
  for (const char* key : {"conv1.weight", "bn1.running_mean", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
                          "layer2.0.downsample.1.running_var", "layer4.1.bn2.bias", "fc.weight", "fc.bias"})
    EXPECT_TRUE(keys.count(key)) << key;
  s.config.name = "resnet50";
  EXPECT_EQ(parameter_count(*build_model(s)), 25557032);
  s.config.name = "resnet34";
  EXPECT_EQ(parameter_count(*build_model(s)), 21797672);
}

TEST(Models, MlpFollowsTheConfig) {
  auto s = spec("mlp", {2, 4});
  s.config.hidden = {16, 8};
  s.config.norm = "layer";
  s.config.dropout = 0.5;
  auto model = build_model(s);
  // Flatten(0), Linear(1), LayerNorm(2), ReLU(3), Dropout(4), Linear(5), ...
  EXPECT_EQ(names(*model), (std::set<std::string>{"1.weight", "1.bias", "2.weight", "2.bias", "5.weight", "5.bias", "6.weight", "6.bias",
                                                  "9.weight", "9.bias"}));
  EXPECT_EQ(parameter_count(*model), (8 * 16 + 16) + 32 + (16 * 8 + 8) + 16 + (8 * 10 + 10));
}

// Built from data whose samples they cannot read (a CSV's feature vectors), the shaped models say
// what they read and what the data has, before any tensor is made.
TEST(Models, ShapedModelsRejectSamplesOfAnotherShape) {
  const struct {
    const char* name;
    std::vector<std::int64_t> shape;
    const char* says;
  } cases[] = {{"small_cnn", {12}, "small_cnn reads samples shaped [channels, height, width]; this data's samples are shaped [12]"},
               {"resnet18", {12}, "resnet18 reads samples shaped [channels, height, width]; this data's samples are shaped [12]"},
               {"transformer", {12}, "transformer reads samples shaped [sequence, features]; this data's samples are shaped [12]"},
               {"transformer", {3, 8, 8}, "this data's samples are shaped [3, 8, 8]"}};
  for (const auto& c : cases) {
    try {
      build_model(spec(c.name, c.shape));
      ADD_FAILURE() << c.name << " built";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(e.remedy().find("model.name: mlp"), std::string::npos) << e.remedy();
    }
  }
}

TEST(Models, UnknownNameAndMissingTorchScriptAreUsageErrors) {
  EXPECT_THROW(build_model(spec("nope", {4})), UsageError);
  auto s = spec("mlp", {4});
  s.config.torchscript = "/no/such/model.pt";
  EXPECT_THROW(build_model(s), UsageError);
}

TEST(Models, RegisteredModelIsBuiltByName) {
  register_model("tiny_linear", [](const ModelSpec& s) { return torch::nn::AnyModule(torch::nn::Linear(s.input_shape.at(0), s.outputs)); });
  auto model = build_model(spec("tiny_linear", {5}, 2));
  EXPECT_EQ(parameter_count(*model), 12);
  EXPECT_EQ(model->forward(at::randn({4, 5})).sizes(), (std::vector<std::int64_t>{4, 2}));
}

// A model of many parameters, none too large alone (model.layers: 100000), grew until the kernel's
// OOM killer ended the run; the build now stops where the process has grown by 90 % of the free
// RAM, with the model's error. Here a limit of 256 MiB over what the process holds stands for it
// (a caller's limit holds), and 64 MiB parameters are touched, so that they count.
TEST(Models, AModelLargerThanTheFreeRamIsRefusedWhileItIsBuilt) {
  struct Hoard : torch::nn::Module {
    Hoard() {
      for (int i = 0; i < 1024; ++i) register_parameter("p" + std::to_string(i), at::zeros({std::int64_t{1} << 24}));
    }
    at::Tensor forward(const at::Tensor& x) { return x; }
  };
  memory::install_counting_cpu_allocator();  // as a run's set-up does
  register_model("hoard", [](const ModelSpec&) { return torch::nn::AnyModule(Hoard()); });
  const auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
  memory::set_cpu_resident_limit(resident + 256 * core::kMiB);
  try {
    build_model(spec("hoard", {4}));
    ADD_FAILURE() << "64 GiB of parameters were built";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("model hoard cannot be built: it takes more than the "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" of RAM that is free"), std::string::npos) << e.what();
  }
  EXPECT_EQ(memory::cpu_memory_stats().resident_limit, resident + 256 * core::kMiB);  // the caller's, left to it
  memory::set_cpu_resident_limit(0);
  EXPECT_LT(device::host_rss_bytes(), static_cast<double>(resident + 512 * core::kMiB));  // the parameters went with the error
}

// model.layers: 100000 was refused by the limit above only after ~80 s of building layers; the
// transformer now weighs its first layer and refuses the copies before making any.
TEST(Models, ATransformerWhoseLayersCannotFitIsRefusedBeforeTheyAreBuilt) {
  memory::install_counting_cpu_allocator();
  auto s = spec("transformer", {16, 8});
  s.config.layers = 100000;
  s.config.d_model = 256;
  s.config.ff_dim = 1024;
  const auto resident = static_cast<std::uint64_t>(device::host_rss_bytes());
  memory::set_cpu_resident_limit(resident + 256 * core::kMiB);
  try {
    build_model(s);
    ADD_FAILURE() << "100000 encoder layers were built";
  } catch (const UsageError& e) {
    // One layer: 4 256x256 projections, 256x1024 twice, biases and norms: 789,760 fp32 weights.
    EXPECT_NE(std::string(e.what()).find("model transformer cannot be built: its 100000 encoder layers take 294.21 GiB (3.01 MiB each), "
                                         "more than the "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.remedy()).find("model.layers"), std::string::npos) << e.remedy();
  }
  memory::set_cpu_resident_limit(0);
  EXPECT_LT(device::host_rss_bytes(), static_cast<double>(resident + 128 * core::kMiB));  // no copy was made

  s.config.layers = 2;  // copies that fit are built
  memory::set_cpu_resident_limit(resident + 256 * core::kMiB);
  EXPECT_NO_THROW(build_model(s));
  memory::set_cpu_resident_limit(0);
}

TEST(Models, AutoIsModelNamesChoiceAndCannotBeRegistered) {
  const auto dummy = [](const ModelSpec& s) { return torch::nn::AnyModule(torch::nn::Linear(s.input_shape.at(0), s.outputs)); };
  EXPECT_THROW(register_model("auto", dummy), UsageError);
  const auto names = registered_models();
  EXPECT_EQ(std::count(names.begin(), names.end(), "auto"), 0);
}

TEST(Models, LoadNamedStateRefusesAnotherModelsTensors) {
  auto a = build_model(spec("mlp", {4}));
  auto b = build_model(spec("mlp", {6}));
  EXPECT_THROW(load_named_state(*a, b->named_state()), Error);
  auto c = build_model(spec("mlp", {4}));
  load_named_state(*c, a->named_state());
  const auto x = at::randn({2, 4});
  EXPECT_TRUE(at::equal(a->forward(x), c->forward(x)));
}

// The error of each mismatch names where the tensors came from and that origin's fix; names that
// carry a wrapper's prefix ("module." from DDP) are told apart from another model's names.
TEST(Models, LoadNamedStateErrorsNameTheOriginAndAPrefix) {
  auto model = build_model(spec("mlp", {4}));
  const StateOrigin origin{"model.init_weights (w.safetensors)", "set the model keys"};
  const auto error_of = [&](const NamedTensors& state) -> std::string {
    try {
      load_named_state(*model, state, origin);
    } catch (const Error& e) {
      return std::string(e.what()) + " | fix: " + e.remedy();
    }
    return "loaded";
  };
  NamedTensors prefixed;
  for (const auto& [name, tensor] : model->named_state()) prefixed.emplace_back("module." + name, tensor);
  EXPECT_NE(error_of(prefixed).find("model.init_weights (w.safetensors) names model mlp's tensor '1.weight' as 'module.1.weight': its "
                                    "names carry the prefix 'module.' | fix: "),
            std::string::npos)
      << error_of(prefixed);
  EXPECT_NE(error_of(prefixed).find("{k.removeprefix('module.'): v for k, v in state_dict.items()}"), std::string::npos);
  EXPECT_EQ(error_of({}),
            "model.init_weights (w.safetensors) has no tensor '1.weight' for model mlp (it has none) | fix: set the model keys");
  EXPECT_EQ(
      error_of(build_model(spec("mlp", {6}))->named_state()),
      "tensor '1.weight' has shape [256, 6] in model.init_weights (w.safetensors) but [256, 4] in model mlp | fix: set the model keys");
  // Another model whose names merely end alike (resnet's "layer2.0.downsample.1.weight") carries no prefix.
  NamedTensors other{{"layer2.0.downsample.1.weight", at::zeros({1})}, {"fc.weight", at::zeros({1})}};
  EXPECT_EQ(error_of(other),
            "model.init_weights (w.safetensors) holds another model's weights: none of its 2 tensors (e.g. 'fc.weight') is one of "
            "model mlp's 6 (e.g. '1.weight') | fix: set the model keys");
  auto missing_one = model->named_state();
  missing_one.erase(missing_one.begin());
  EXPECT_EQ(error_of(missing_one),
            "model.init_weights (w.safetensors) has no tensor '1.weight' for model mlp (it has 5, e.g. '1.bias') | "
            "fix: set the model keys");
  auto extra = model->named_state();
  extra.emplace_back("head.weight", at::zeros({1}));
  EXPECT_EQ(error_of(extra),
            "model.init_weights (w.safetensors) has tensor 'head.weight' that model mlp does not | fix: set the model keys");
}

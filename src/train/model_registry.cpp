#include "gputrain/train/model_registry.hpp"

#include <map>
#include <mutex>

#include "gputrain/core/error.hpp"
#include "models/builtin_models.hpp"
#include "module_model.hpp"

namespace gputrain::train {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModelFactory> factories;
  Registry() {
    factories["mlp"] = models::make_mlp;
    factories["small_cnn"] = models::make_small_cnn;
    factories["resnet18"] = [](const ModelSpec& s) { return models::make_resnet(s, 18); };
    factories["resnet34"] = [](const ModelSpec& s) { return models::make_resnet(s, 34); };
    factories["resnet50"] = [](const ModelSpec& s) { return models::make_resnet(s, 50); };
    factories["transformer"] = models::make_transformer;
  }
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_model(const std::string& name, ModelFactory factory) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> registered_models() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Model> build_model(const ModelSpec& spec) {
  if (!spec.config.torchscript.empty()) return load_torchscript(spec.config.torchscript);
  ModelFactory factory;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(spec.config.name);
    if (it == r.factories.end())
      throw UsageError("model.name: no model named '" + spec.config.name + "'",
                       "pick a registered model (mlp, small_cnn, resnet18, resnet34, resnet50, transformer) or register_model() yours");
    factory = it->second;
  }
  return wrap_module(factory(spec), spec.config.name);
}

}  // namespace gputrain::train

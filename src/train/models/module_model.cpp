#include "module_model.hpp"

#include <torch/nn/module.h>
#include <torch/script.h>

#include <filesystem>

#include "gputrain/core/error.hpp"
#include "gputrain/core/similar_path.hpp"

namespace gputrain::train {
namespace {

class ModuleModel final : public Model {
 public:
  ModuleModel(torch::nn::AnyModule module, std::string name) : module_(std::move(module)), name_(std::move(name)) {}
  at::Tensor forward(const at::Tensor& input) override { return module_.forward<at::Tensor>(input); }
  std::vector<at::Tensor> parameters() override { return module_.ptr()->parameters(); }
  NamedTensors named_state() override {
    NamedTensors state;
    for (const auto& p : module_.ptr()->named_parameters()) state.emplace_back(p.key(), p.value());
    for (const auto& b : module_.ptr()->named_buffers()) state.emplace_back(b.key(), b.value());
    return state;
  }
  void to(c10::Device device) override { module_.ptr()->to(device); }
  void set_training(bool on) override { module_.ptr()->train(on); }
  std::string name() const override { return name_; }
  torch::nn::Module* module() override { return module_.ptr().get(); }

 private:
  torch::nn::AnyModule module_;
  std::string name_;
};

// "a tuple of 2 values", "a dict": what a scripted forward gave instead of a tensor.
std::string what_is(const c10::IValue& value) {
  if (value.isTuple()) return "a tuple of " + std::to_string(value.toTupleRef().elements().size()) + " values";
  if (value.isList()) return "a list of " + std::to_string(value.toListRef().size()) + " values";
  if (value.isGenericDict()) return "a dict";
  return "a " + std::string(value.tagKind());
}

class ScriptModel final : public Model {
 public:
  ScriptModel(torch::jit::Module module, std::string path) : module_(std::move(module)), path_(std::move(path)) {}
  at::Tensor forward(const at::Tensor& input) override {
    auto output = module_.forward({input});
    if (output.isTensor()) return output.toTensor();
    // A model scripted as it is used for inference often returns more than the logits.
    throw UsageError("model.torchscript '" + path_ + "' returns " + what_is(output) + ", not one tensor of [batch, outputs]",
                     "make forward return the logits alone (return logits, not return logits, features) and script it again");
  }
  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> params;
    for (const auto& p : module_.parameters()) params.push_back(p);
    return params;
  }
  NamedTensors named_state() override {
    NamedTensors state;
    for (const auto& p : module_.named_parameters()) state.emplace_back(p.name, p.value);
    for (const auto& b : module_.named_buffers()) state.emplace_back(b.name, b.value);
    return state;
  }
  void to(c10::Device device) override { module_.to(device); }
  void set_training(bool on) override { module_.train(on); }
  std::string name() const override { return std::filesystem::path(path_).filename().string(); }

 private:
  torch::jit::Module module_;
  std::string path_;  // as model.torchscript gives it
};

}  // namespace

std::int64_t parameter_count(Model& model) {
  std::int64_t count = 0;
  for (const auto& p : model.parameters()) count += p.numel();
  return count;
}

void use_channels_last(Model& model) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : model.named_state())  // frozen weights too, which parameters() leaves out
    if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
}

void load_named_state(Model& model, const NamedTensors& state, const StateOrigin& origin) {
  auto own = model.named_state();
  std::map<std::string, at::Tensor> given(state.begin(), state.end());
  // The names check first, all of them, so a file of the right weights under other names is told
  // apart from a file of other weights.
  for (const auto& [name, tensor] : own) {
    if (given.count(name)) continue;
    for (const auto& [key, unused] : given) {
      if (key.size() <= name.size() || key.compare(key.size() - name.size(), name.size(), name) != 0 ||
          key[key.size() - name.size() - 1] != '.')
        continue;
      const auto prefix = key.substr(0, key.size() - name.size());
      throw UsageError(origin.name + " names model " + model.name() + "'s tensor '" + name + "' as '" + key +
                           "': its names carry the prefix '" + prefix + "'",
                       "save the weights without it, e.g. in Python {k.removeprefix('" + prefix +
                           "'): v for k, v in state_dict.items()} (a model "
                           "wrapped by DDP or another module adds it)");
    }
    throw UsageError(origin.name + " has no tensor '" + name + "' for model " + model.name() + " (" +
                         (given.empty() ? std::string("it has none")
                                        : "it has " + std::to_string(given.size()) + ", e.g. '" + given.begin()->first + "'") +
                         ")",
                     origin.remedy);
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : own) {
    auto it = given.find(name);
    if (it->second.sizes() != tensor.sizes())
      throw UsageError("tensor '" + name + "' has shape " + c10::str(it->second.sizes()) + " in " + origin.name + " but " +
                           c10::str(tensor.sizes()) + " in model " + model.name(),
                       origin.remedy);
    tensor.copy_(it->second);
    given.erase(it);
  }
  if (!given.empty())
    throw UsageError(origin.name + " has tensor '" + given.begin()->first + "' that model " + model.name() + " does not", origin.remedy);
}

std::unique_ptr<Model> wrap_module(torch::nn::AnyModule module, std::string name) {
  return std::make_unique<ModuleModel>(std::move(module), std::move(name));
}

std::unique_ptr<Model> load_torchscript(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw UsageError("model.torchscript: file '" + path + "' does not exist" + core::did_you_mean(path),
                     "save one from Python with torch.jit.script(model).save('" + path + "')");
  try {
    return std::make_unique<ScriptModel>(torch::jit::load(path), path);
  } catch (const c10::Error& e) {
    throw UsageError("model.torchscript: '" + path + "' is not a TorchScript module: " + e.what_without_backtrace(),
                     "save it with torch.jit.script(model).save(path) (a state_dict from torch.save is not enough)");
  }
}

}  // namespace gputrain::train

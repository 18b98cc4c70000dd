#include "module_model.hpp"

#include <torch/csrc/jit/runtime/print_handler.h>
#include <torch/nn/module.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <string>

#include "data/stand_in_file.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/similar_path.hpp"
#include "gputrain/train/checkpoint.hpp"

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

namespace {

// The prefix a wrapper put before every one of the model's names in `given` ("module.", or any
// other), found from the first name that is missing as it is; none when no prefix explains them all
// (another model's file whose names merely end alike: resnet's "layer2.0.downsample.1.weight" is
// no wrapped mlp "1.weight").
std::optional<std::string> wrapper_prefix(const NamedTensors& own, const std::map<std::string, at::Tensor>& given,
                                          const std::string& missing) {
  for (const auto& [key, unused] : given) {
    if (key.size() <= missing.size() || key.compare(key.size() - missing.size(), missing.size(), missing) != 0 ||
        key[key.size() - missing.size() - 1] != '.')
      continue;
    const auto prefix = key.substr(0, key.size() - missing.size());
    if (std::all_of(own.begin(), own.end(), [&](const auto& named) { return given.count(prefix + named.first) > 0; })) return prefix;
  }
  return std::nullopt;
}

}  // namespace

void load_named_state(Model& model, const NamedTensors& state, const StateOrigin& origin) {
  auto own = model.named_state();
  std::map<std::string, at::Tensor> given(state.begin(), state.end());
  // The names check first, all of them, so a file of the right weights under other names is told
  // apart from a file of other weights.
  for (const auto& [name, tensor] : own) {
    if (given.count(name)) continue;
    if (const auto prefix = wrapper_prefix(own, given, name))
      throw UsageError(origin.name + " names model " + model.name() + "'s tensor '" + name + "' as '" + *prefix + name +
                           "': its names carry the prefix '" + *prefix + "'",
                       "save the weights without it, e.g. in Python {k.removeprefix('" + *prefix +
                           "'): v for k, v in state_dict.items()} (a model "
                           "wrapped by DDP or another module adds it)");
    const auto shared = std::count_if(own.begin(), own.end(), [&](const auto& named) { return given.count(named.first) > 0; });
    if (shared == 0 && !given.empty())  // not one name in common: another model's weights
      throw UsageError(origin.name + " holds another model's weights: none of its " + std::to_string(given.size()) + " tensors (e.g. '" +
                           given.begin()->first + "') is one of model " + model.name() + "'s " + std::to_string(own.size()) + " (e.g. '" +
                           name + "')",
                       origin.remedy);
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

namespace {

const std::string kSaveScripted = "save the module from Python with torch.jit.script(model).save(path)";

// Why LibTorch's zip reader refused `path`, said in the user's terms with what to do.
[[noreturn]] void refuse_unreadable(const std::string& path, const std::string& reader_message) {
  const std::string what = "model.torchscript: '" + path + "' ";
  if (std::filesystem::is_directory(path)) throw UsageError(what + "is a folder", "name the .pt file that torch.jit.save wrote");
  if (!is_zip_archive(path)) {
    if (std::filesystem::path(path).extension() == ".safetensors")
      throw UsageError(what + "is a safetensors weights file: weights without the module's code",
                       "for a built-in model, set model.name and model.init_weights: " + path + "; else " + kSaveScripted);
    throw UsageError(what + "is not a TorchScript module (those are zip archives, as torch.jit.save writes them)", kSaveScripted);
  }
  const std::string reason = core::without_miniz_advice(reader_message);
  if (reason.find("constants.pkl") != std::string::npos)
    throw UsageError(what +
                         "is a zip archive but not a TorchScript module (it has no constants.pkl): a state_dict or "
                         "checkpoint from torch.save holds no code",
                     kSaveScripted + "; for a built-in model, set model.name and model.init_weights: " + path + " (it reads state_dicts)");
  throw UsageError(what + "could not be read: " + reason, kSaveScripted + ", and check that the copy is whole");
}

// A module exported for inference may name its entry point otherwise (predict, infer): training
// calls forward.
void refuse_without_forward(const torch::jit::Module& module, const std::string& path) {
  if (module.find_method("forward")) return;
  std::string methods;
  for (const auto& method : module.get_methods()) methods += (methods.empty() ? "" : ", ") + method.name();
  throw UsageError("model.torchscript: '" + path + "' has no forward method" + (methods.empty() ? "" : " (it has " + methods + ")"),
                   "name the method that computes the logits forward in the module, and script it again");
}

}  // namespace

std::unique_ptr<Model> load_torchscript(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw UsageError("model.torchscript: file '" + path + "' does not exist" + core::did_you_mean(path),
                     "save one from Python with torch.jit.script(model).save('" + path + "')");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) && !std::filesystem::is_directory(path, ec))  // a named pipe would block the load
    throw UsageError("model.torchscript: '" + path + "' is a pipe or a device, not a file", kSaveScripted);
  data::refuse_stand_in_file(path);
  // A module's print() goes where gputrain's own lines go, stderr: stdout keeps --json's object alone.
  torch::jit::setPrintHandler([](const std::string& text) { std::cerr << text << std::flush; });
  try {
    auto module = torch::jit::load(path);
    refuse_without_forward(module, path);
    return std::make_unique<ScriptModel>(std::move(module), path);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    refuse_unreadable(path, e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // TorchScript's compiler: the archive reads, its code does not compile here
    const std::string message = e.what();
    const auto first = message.find_first_not_of(" \n");
    throw UsageError("model.torchscript: '" + path + "' holds code LibTorch " TORCH_VERSION " cannot compile: " +
                         core::first_line(first == std::string::npos ? message : message.substr(first)),
                     "script and save it again with PyTorch " TORCH_VERSION
                     " (a module saved by another version may use what "
                     "this one lacks)");
  }
}

}  // namespace gputrain::train

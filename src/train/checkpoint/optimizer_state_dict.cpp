#include "optimizer_state_dict.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

#include "gputrain/core/error.hpp"
#include "gputrain/train/optimizer.hpp"
#include "pickle_dict.hpp"
#include "train/step/optimizer_kind.hpp"

namespace gputrain::train {
namespace {

namespace optim = torch::optim;
using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

using Kind = OptimizerKind;
Kind kind_of(optim::Optimizer& optimizer) { return optimizer_kind(optimizer); }

const char* kind_name(Kind kind) {
  return kind == Kind::sgd ? "SGD" : kind == Kind::adam ? "Adam" : kind == Kind::adamw ? "AdamW" : "this optimizer";
}

// The hyper-parameters under PyTorch's names, with the values its own optimizer shows for the
// same settings (gputrain never maximizes; foreach and fused are PyTorch's choices of kernel).
void put_sgd_options(Dict& group, const optim::SGDOptions& o) {
  group.insert("lr", o.lr());
  group.insert("momentum", o.momentum());
  group.insert("dampening", o.dampening());
  group.insert("weight_decay", o.weight_decay());
  group.insert("nesterov", o.nesterov());
  group.insert("maximize", false);
  group.insert("foreach", c10::IValue());
  group.insert("differentiable", false);
  group.insert("fused", c10::IValue());
}

template <typename Options>
void put_adam_options(Dict& group, const Options& o, bool decoupled) {
  group.insert("lr", o.lr());
  group.insert("betas", c10::ivalue::Tuple::create(std::get<0>(o.betas()), std::get<1>(o.betas())));
  group.insert("eps", o.eps());
  group.insert("weight_decay", o.weight_decay());
  group.insert("amsgrad", o.amsgrad());
  group.insert("maximize", false);
  group.insert("foreach", c10::IValue());
  group.insert("capturable", false);
  group.insert("differentiable", false);
  group.insert("fused", c10::IValue());
  group.insert("decoupled_weight_decay", decoupled);
}

void put_options(Kind kind, const optim::OptimizerOptions& options, Dict& group) {
  if (kind == Kind::sgd) put_sgd_options(group, static_cast<const optim::SGDOptions&>(options));
  if (kind == Kind::adam) put_adam_options(group, static_cast<const optim::AdamOptions&>(options), false);
  if (kind == Kind::adamw) put_adam_options(group, static_cast<const optim::AdamWOptions&>(options), true);
}

template <typename State>
Dict adam_state(const State& s) {
  Dict d = named_dict();
  // PyTorch keeps the count as a float32 scalar tensor.
  d.insert("step", at::scalar_tensor(static_cast<double>(s.step()), at::kFloat));
  d.insert("exp_avg", on_host(s.exp_avg()));
  d.insert("exp_avg_sq", on_host(s.exp_avg_sq()));
  if (s.max_exp_avg_sq().defined()) d.insert("max_exp_avg_sq", on_host(s.max_exp_avg_sq()));
  return d;
}

Dict param_state(Kind kind, const optim::OptimizerParamState& state) {
  if (kind == Kind::adam) return adam_state(static_cast<const optim::AdamParamState&>(state));
  if (kind == Kind::adamw) return adam_state(static_cast<const optim::AdamWParamState&>(state));
  Dict d = named_dict();
  const auto& buffer = static_cast<const optim::SGDParamState&>(state).momentum_buffer();
  if (buffer.defined()) d.insert("momentum_buffer", on_host(buffer));
  return d;
}

// An optimizer PyTorch has no layout for: LibTorch's own archive, as bytes.
c10::IValue archive_bytes(optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  const auto bytes = out.str();
  auto tensor = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
  std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  Dict d = named_dict();
  d.insert("libtorch_archive", tensor);
  return d;
}

}  // namespace

void refuse_optimizer_state(const std::string& path, const std::string& optimizer, const std::string& why) {
  throw UsageError("the optimizer state in checkpoint '" + path + "' does not fit this run's optimizer" + optimizer + ": " + why,
                   "resume with the optimizer settings the checkpoint was written with (its config.yaml), or set "
                   "checkpoint.resume: never");
}

c10::IValue optimizer_state_dict(optim::Optimizer& optimizer, const NamedTensors& named) {
  const Kind kind = kind_of(optimizer);
  if (kind == Kind::other) return archive_bytes(optimizer);
  if (auto* stepped = device_stepped(optimizer)) stepped->flush_host_state();  // Adam's step counts
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, tensor] : named) names.emplace(tensor.unsafeGetTensorImpl(), name);
  Dict state(c10::IntType::get(), c10::AnyType::get());
  List groups(c10::AnyType::get());
  std::int64_t index = 0;
  for (auto& group : optimizer.param_groups()) {
    Dict saved = named_dict();
    put_options(kind, group.options(), saved);
    List params(c10::AnyType::get()), param_names(c10::AnyType::get());
    for (const auto& p : group.params()) {
      const auto found = optimizer.state().find(p.unsafeGetTensorImpl());
      if (found != optimizer.state().end()) state.insert(index, param_state(kind, *found->second));
      params.push_back(index++);
      const auto name = names.find(p.unsafeGetTensorImpl());
      if (name != names.end()) param_names.push_back(name->second);
    }
    saved.insert("params", params);
    if (param_names.size() == params.size()) saved.insert("param_names", param_names);
    groups.push_back(saved);
  }
  Dict out = named_dict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

namespace {

// Builds the replacement state, checking everything before the optimizer is touched.
class StateReader {
 public:
  StateReader(Kind kind, const std::string& path) : kind_(kind), path_(path) {}

  [[noreturn]] void refuse(const std::string& why) const { refuse_optimizer_state(path_, std::string(" (") + kind_name(kind_) + ")", why); }

  at::Tensor like(const c10::IValue& value, const at::Tensor& param, const std::string& what) const {
    if (!value.isTensor()) refuse(what + " is not a tensor");
    const auto& saved = value.toTensor();
    if (saved.sizes() != param.sizes())
      refuse(what + " has shape " + c10::str(saved.sizes()) + ", its parameter " + c10::str(param.sizes()));
    return at::empty_like(param, at::MemoryFormat::Preserve).copy_(saved);
  }

  std::unique_ptr<optim::OptimizerParamState> read(std::int64_t index, const Dict& saved, const at::Tensor& param) const {
    const std::string what = "parameter " + std::to_string(index) + "'s ";
    static const std::set<std::string> sgd_keys{"momentum_buffer"}, adam_keys{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    for (const auto& entry : saved) {
      const auto key = entry.key().isString() ? entry.key().toStringRef() : "?";
      if (!(kind_ == Kind::sgd ? sgd_keys : adam_keys).count(key))
        refuse(what + "state holds '" + key + "', which " + kind_name(kind_) + " does not keep: another optimizer wrote it");
    }
    if (kind_ == Kind::sgd) {
      auto state = std::make_unique<optim::SGDParamState>();
      if (saved.contains("momentum_buffer") && !saved.at("momentum_buffer").isNone())
        state->momentum_buffer(like(saved.at("momentum_buffer"), param, what + "momentum_buffer"));
      return state;
    }
    return kind_ == Kind::adam ? adam<optim::AdamParamState>(what, saved, param) : adam<optim::AdamWParamState>(what, saved, param);
  }

 private:
  template <typename State>
  std::unique_ptr<optim::OptimizerParamState> adam(const std::string& what, const Dict& saved, const at::Tensor& param) const {
    for (const char* key : {"step", "exp_avg", "exp_avg_sq"})
      if (!saved.contains(key)) refuse(what + "state has no '" + key + "'");
    auto state = std::make_unique<State>();
    const auto& step = saved.at("step");  // a tensor since PyTorch 1.12, a number before
    state->step(static_cast<std::int64_t>(step.isTensor() ? step.toTensor().item<double>() : step.toScalar().toDouble()));
    state->exp_avg(like(saved.at("exp_avg"), param, what + "exp_avg"));
    state->exp_avg_sq(like(saved.at("exp_avg_sq"), param, what + "exp_avg_sq"));
    if (saved.contains("max_exp_avg_sq")) state->max_exp_avg_sq(like(saved.at("max_exp_avg_sq"), param, what + "max_exp_avg_sq"));
    return state;
  }

  Kind kind_;
  const std::string& path_;
};

void load_archive_bytes(optim::Optimizer& optimizer, const at::Tensor& bytes) {
  torch::serialize::InputArchive archive;
  const auto host = bytes.contiguous();
  archive.load_from(static_cast<const char*>(host.data_ptr()), static_cast<std::size_t>(host.numel()));
  optimizer.load(archive);
}

}  // namespace

void load_optimizer_state_dict(optim::Optimizer& optimizer, const c10::IValue& value, const std::string& path) {
  const Kind kind = kind_of(optimizer);
  const StateReader reader(kind, path);
  if (!value.isGenericDict()) reader.refuse("it is not a dict");
  const auto dict = value.toGenericDict();
  if (dict.contains("libtorch_archive") || kind == Kind::other) {
    if (!dict.contains("libtorch_archive") || !dict.at("libtorch_archive").isTensor())
      reader.refuse("it is in PyTorch's layout, which only SGD, Adam and AdamW read");
    try {
      return load_archive_bytes(optimizer, dict.at("libtorch_archive").toTensor());
    } catch (const c10::Error& e) {
      reader.refuse(e.what_without_backtrace());
    }
  }
  if (!dict.contains("state") || !dict.contains("param_groups") || !dict.at("param_groups").isList() || !dict.at("state").isGenericDict())
    reader.refuse("it has no 'state' dict and 'param_groups' list");
  const auto saved_groups = dict.at("param_groups").toList();
  auto& groups = optimizer.param_groups();
  if (saved_groups.size() != groups.size())
    reader.refuse("it has " + std::to_string(saved_groups.size()) + " parameter groups, this run " + std::to_string(groups.size()));
  std::map<std::int64_t, at::Tensor> params;  // PyTorch's numbering: saved index -> live parameter
  std::vector<double> lrs;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const c10::IValue& entry = saved_groups.get(g);
    if (!entry.isGenericDict() || !entry.toGenericDict().contains("params")) reader.refuse("group " + std::to_string(g) + " has no params");
    const auto group = entry.toGenericDict();
    const auto indices = group.at("params").toList();
    if (indices.size() != groups[g].params().size())
      reader.refuse("group " + std::to_string(g) + " has " + std::to_string(indices.size()) + " parameters, this run's " +
                    std::to_string(groups[g].params().size()) + " (were other layers frozen or grouped?)");
    for (std::size_t i = 0; i < indices.size(); ++i) params[indices.get(i).toInt()] = groups[g].params()[i];
    lrs.push_back(group.contains("lr") ? group.at("lr").toScalar().toDouble() : groups[g].options().get_lr());
  }
  std::vector<std::pair<void*, std::unique_ptr<optim::OptimizerParamState>>> states;
  for (const auto& entry : dict.at("state").toGenericDict()) {
    const auto index = entry.key().isInt() ? entry.key().toInt() : -1;
    const auto param = params.find(index);
    if (param == params.end()) reader.refuse("it holds state for parameter " + std::to_string(index) + ", which no group has");
    if (!entry.value().isGenericDict()) reader.refuse("parameter " + std::to_string(index) + "'s state is not a dict");
    states.emplace_back(param->second.unsafeGetTensorImpl(), reader.read(index, entry.value().toGenericDict(), param->second));
  }
  optimizer.state().clear();
  for (auto& [key, state] : states) optimizer.state()[key] = std::move(state);
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lrs[g]);
  if (auto* stepped = device_stepped(optimizer)) stepped->drop_device_state();
}

}  // namespace gputrain::train

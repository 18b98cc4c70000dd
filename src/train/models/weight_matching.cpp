#include "weight_matching.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <ATen/ATen.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/StringUtil.h>

#include "gputrain/core/units.hpp"

namespace gputrain::train {
namespace {

// Prefixes wrappers put before a module's own names; tried in this order, the longest matches win.
const char* const kPrefixes[] = {"", "module.", "model.", "_orig_mod.", "module.model.", "model.module.", "module._orig_mod."};

std::int64_t found_with(const std::string& prefix, const NamedTensors& model, const std::map<std::string, at::Tensor>& file) {
  return std::count_if(model.begin(), model.end(), [&](const auto& own) { return file.count(prefix + own.first) > 0; });
}

}  // namespace

WeightMatch match_weights(const NamedTensors& model, const NamedTensors& file) {
  const std::map<std::string, at::Tensor> by_name(file.begin(), file.end());
  WeightMatch match;
  std::int64_t best = -1;
  for (const char* prefix : kPrefixes)
    if (const auto found = found_with(prefix, model, by_name); found > best) best = found, match.prefix = prefix;
  std::set<std::string> used;
  for (const auto& [name, tensor] : model) {
    const auto it = by_name.find(match.prefix + name);
    if (it == by_name.end()) {
      match.missing.push_back(name);
      continue;
    }
    used.insert(it->first);
    if (it->second.sizes() == tensor.sizes())
      match.fits.emplace_back(name, it->second);
    else
      match.misfits.push_back({name, it->second.sizes().vec(), tensor.sizes().vec()});
  }
  for (const auto& [name, tensor] : file)
    if (!used.count(name)) match.extra.push_back(name);
  return match;
}

std::vector<std::string> head_names(const NamedTensors& model, std::int64_t outputs) {
  for (auto it = model.rbegin(); it != model.rend(); ++it) {
    const auto& [name, tensor] = *it;
    if (tensor.dim() != 2 || tensor.size(0) != outputs) continue;
    const auto dot = name.rfind('.');
    const std::string bias = (dot == std::string::npos ? "" : name.substr(0, dot + 1)) + "bias";
    std::vector<std::string> head{name};
    for (const auto& [other, t] : model)
      if (other == bias && t.dim() == 1 && t.size(0) == outputs) head.push_back(bias);
    return head;
  }
  return {};
}

bool only_the_head_differs(const WeightMatch& match, const std::vector<std::string>& head) {
  if (match.misfits.empty() || !match.missing.empty() || !match.extra.empty()) return false;
  return std::all_of(match.misfits.begin(), match.misfits.end(), [&](const WeightMatch::Misfit& m) {
    const bool in_head = std::find(head.begin(), head.end(), m.name) != head.end();
    return in_head && m.in_file.size() == m.in_model.size() && std::equal(m.in_file.begin() + 1, m.in_file.end(), m.in_model.begin() + 1);
  });
}

NamedTensors without_wrapper_prefix(const NamedTensors& model, NamedTensors file) {
  const auto prefix = match_weights(model, file).prefix;
  if (!prefix.empty())
    for (auto& [name, tensor] : file)
      if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
  return file;
}

bool names_under(const std::string& name, const std::string& prefix) {
  return name == prefix || (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.');
}

std::vector<std::string> name_prefixes(const NamedTensors& named) {
  std::set<std::string> prefixes;
  for (const auto& [name, tensor] : named) {
    const auto dot = name.find('.');
    prefixes.insert(name.substr(0, dot));
    if (dot != std::string::npos) prefixes.insert(name.substr(0, name.find('.', dot + 1)));
  }
  return {prefixes.begin(), prefixes.end()};
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return c10::str(c10::IntArrayRef(shape)); }

std::optional<std::string> nonfinite_tensor(const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors) {
    if (!at::isFloatingType(tensor.scalar_type())) continue;
    const auto bad = (~at::isfinite(tensor)).sum().item<std::int64_t>();
    if (bad > 0) return name + " holds NaN or inf in " + std::to_string(bad) + " of its " + core::counted(tensor.numel(), "value");
  }
  return std::nullopt;
}

}  // namespace gputrain::train

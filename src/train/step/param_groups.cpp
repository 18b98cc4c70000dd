#include "param_groups.hpp"

#include <algorithm>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "train/models/weight_matching.hpp"

namespace gputrain::train {

ParamGroupPlan plan_param_groups(const OptimizerConfig& config, const NamedTensors& named) {
  const auto& entries = config.param_groups;
  const std::size_t implicit = entries.size();  // the last group: parameters no entry names
  std::size_t default_group = implicit;
  for (std::size_t g = 0; g < entries.size(); ++g) {
    const std::string at = "optimizer.param_groups[" + std::to_string(g) + "]";
    for (const auto& prefix : entries[g].params) {
      if (prefix == "default") {
        if (default_group != implicit)
          throw UsageError(at + " is a second default group (the first is [" + std::to_string(default_group) + "])",
                           "name default in one entry: it takes every parameter no other entry names");
        default_group = g;
        continue;
      }
      if (std::none_of(named.begin(), named.end(), [&](const auto& p) { return names_under(p.first, prefix); }))
        throw UsageError(at + ": '" + prefix + "' names no parameter that trains" + core::did_you_mean_among(prefix, name_prefixes(named)),
                         "give name prefixes as in the model's state_dict (whole components, e.g. layer4 or fc); a frozen "
                         "parameter (train.freeze) has no group");
    }
  }
  std::vector<std::vector<at::Tensor>> members(entries.size() + 1);
  for (const auto& [name, tensor] : named) {
    const auto names_it = [&](const ParamGroupConfig& e) {
      return std::any_of(e.params.begin(), e.params.end(), [&](const std::string& p) { return p != "default" && names_under(name, p); });
    };
    const auto first = std::find_if(entries.begin(), entries.end(), names_it);
    members[first != entries.end() ? static_cast<std::size_t>(first - entries.begin()) : default_group].push_back(tensor);
  }
  ParamGroupPlan plan;
  for (std::size_t g = 0; g < members.size(); ++g) {
    if (members[g].empty()) continue;
    plan.params.push_back(std::move(members[g]));
    plan.lrs.push_back(g < entries.size() ? entries[g].lr.value_or(config.lr) : config.lr);
    plan.weight_decays.push_back(g < entries.size() ? entries[g].weight_decay.value_or(config.weight_decay) : config.weight_decay);
  }
  return plan;
}

}  // namespace gputrain::train

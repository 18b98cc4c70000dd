#include "param_groups.hpp"

#include <algorithm>
#include <string>

#include "gputrain/core/error.hpp"
#include "gputrain/core/suggest.hpp"
#include "gputrain/core/units.hpp"
#include "train/models/weight_matching.hpp"

namespace gputrain::train {

namespace {

// An entry whose parameters an earlier entry all took (a parameter joins the first naming it) sets
// applies to nothing: [{params: [layer4]}, {params: [layer4.1]}] gives layer4.1 the first's.
void refuse_shadowed_entries(const std::vector<ParamGroupConfig>& entries, const NamedTensors& named,
                             const std::vector<std::vector<at::Tensor>>& members) {
  for (std::size_t g = 0; g < entries.size(); ++g) {
    const auto& own = entries[g].params;
    if (!members[g].empty() || std::find(own.begin(), own.end(), "default") != own.end()) continue;
    for (const auto& [name, tensor] : named) {
      const auto names = [&](const ParamGroupConfig& e) {
        return std::any_of(e.params.begin(), e.params.end(), [&](const std::string& p) { return p != "default" && names_under(name, p); });
      };
      if (!names(entries[g])) continue;
      const auto earlier = std::find_if(entries.begin(), entries.end(), names) - entries.begin();
      throw UsageError("optimizer.param_groups[" + std::to_string(g) + "] (" + core::join(own) + ") applies to no parameter: [" +
                           std::to_string(earlier) + "] names them first (" + name + " among them), and a parameter joins the first " +
                           "entry naming it",
                       "put the narrower entry first: [" + std::to_string(g) + "] before [" + std::to_string(earlier) + "]");
    }
  }
}

}  // namespace

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
  refuse_shadowed_entries(entries, named, members);
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

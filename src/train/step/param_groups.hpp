#pragma once
// optimizer.param_groups turned into the optimizer's groups: which trained parameter goes where.

#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

struct ParamGroupPlan {
  std::vector<std::vector<at::Tensor>> params;  ///< per group, in the model's order
  std::vector<double> lrs;                      ///< each group's base rate (the schedule scales it)
  std::vector<double> weight_decays;
};

/// Groups `named` (the trained parameters by state_dict name) as optimizer.param_groups says: a
/// parameter joins the first entry with a prefix of its name (a whole component: "layer4" is not
/// "layer40"), else the "default" entry, else a last group with optimizer.lr and weight_decay.
/// Groups left empty are dropped. Throws UsageError naming the entry for a prefix that names no
/// trained parameter (a typo, or a frozen one) and for a second "default".
ParamGroupPlan plan_param_groups(const OptimizerConfig& config, const NamedTensors& named);

}  // namespace gputrain::train

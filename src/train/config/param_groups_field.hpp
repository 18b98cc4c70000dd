#pragma once
// optimizer.param_groups: a list of {params, lr, weight_decay} entries, as PyTorch's param groups.

#include "config_schema.hpp"

namespace gputrain::train {

/// The schema's field for optimizer.param_groups.
Field param_groups_field();

}  // namespace gputrain::train

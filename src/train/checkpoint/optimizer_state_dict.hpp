#pragma once
// An optimizer's state in the layout of PyTorch's optimizer.state_dict(), so that Python's
// torch.optim.SGD, Adam and AdamW load what gputrain saved and gputrain resumes what it saved:
//   {"state": {0: {"momentum_buffer": t}, ...},
//    "param_groups": [{"lr": 0.1, "momentum": 0.9, ..., "params": [0, 1], "param_names": [...]}]}
// Parameters are numbered across the groups in order, as PyTorch numbers them. Another optimizer
// (one a C++ program passes to save_checkpoint itself) is kept as LibTorch's archive bytes under
// "libtorch_archive".

#include <ATen/core/ivalue.h>

#include <string>

#include "gputrain/train/model.hpp"

namespace torch::optim {
class Optimizer;
}

namespace gputrain::train {

/// The state of `optimizer`, its parameters named as in `named` (a model's named_state), its
/// tensors on the CPU: the live ones when they are there already, so serialize it before the next step.
c10::IValue optimizer_state_dict(torch::optim::Optimizer& optimizer, const NamedTensors& named);

/// Replaces the state of `optimizer` with `state` (what optimizer_state_dict returned, or what
/// Python's optimizer.state_dict() returned) and sets each group's learning rate to the saved one.
/// Throws UsageError, naming checkpoint `path`, when it does not fit: another optimizer, other
/// groups, other parameters.
void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const c10::IValue& state, const std::string& path);

/// Throws the UsageError of an optimizer state in checkpoint `path` that does not fit: `why`, and
/// the optimizer (" (SGD)", or "" when unnamed); every checkpoint format says it so.
[[noreturn]] void refuse_optimizer_state(const std::string& path, const std::string& optimizer, const std::string& why);

}  // namespace gputrain::train

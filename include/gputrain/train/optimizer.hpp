#pragma once
// Optimizers from the `optimizer` section: LibTorch's SGD, Adam and AdamW, each stepping all its
// parameters in one fused kernel (src/train/step/fused_optimizers.hpp).

#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <vector>

#include "gputrain/train/config.hpp"
#include "gputrain/train/model.hpp"

namespace gputrain::train {

/// The optimizer the config names, over `params`. Throws UsageError for inconsistent settings
/// (e.g. nesterov without momentum).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<at::Tensor> params);

/// The optimizer over the trained parameters `named` (by state_dict name), grouped as
/// optimizer.param_groups says (src/train/step/param_groups.hpp); `base_lrs` receives each
/// group's base rate, in the optimizer's group order, for set_learning_rates.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config, const NamedTensors& named,
                                                        std::vector<double>& base_lrs);

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

/// Sets group g's rate to rate_for(base_lrs[g]): the schedule applied to each group's own base, as
/// PyTorch's schedulers do.
void set_learning_rates(torch::optim::Optimizer& optimizer, const std::vector<double>& base_lrs,
                        const std::function<double(double)>& rate_for);

/// An optimizer whose step reads no value from the host, so that it makes no host sync and can be
/// captured in a CUDA graph: the learning rate comes from a device tensor per group (sync_lr writes
/// the options' rate there), and the GradScaler's found-inf flag makes the kernel skip the update.
/// make_optimizer's optimizers are all such.
class DeviceStepped {
 public:
  virtual ~DeviceStepped() = default;
  /// The flag the next steps read: a step whose flag is 1 leaves parameters and state as they were
  /// (the gradients held inf/nan). Undefined: never skip.
  virtual void skip_when(at::Tensor found_inf) = 0;
  /// Writes each group's learning rate into its device tensor where the options changed it. Every
  /// step does this first; a replayed CUDA graph does not, so its owner calls it before each replay.
  virtual void sync_lr() = 0;
  /// Copies state kept on the device (Adam's step counts) into LibTorch's state objects, which is
  /// what save() writes. save() calls it itself.
  virtual void flush_host_state() {}
  /// Forgets the device copies of that state, after LibTorch's state objects were replaced (a
  /// checkpoint was loaded): the next step starts from the new objects.
  virtual void drop_device_state() {}
  /// From now on a step updates only the parameters in `own` and keeps optimizer state for them
  /// only; the ranks that own the others update those (distributed.shard_optimizer, ZeRO stage 1).
  virtual void step_only(const std::vector<at::Tensor>& own) = 0;
  /// Whether the last step ran in the fused kernels (false: LibTorch's own step, which reads the
  /// host and cannot be captured).
  virtual bool last_step_fused() const = 0;
  /// Why the last step was not fused, naming the parameter at fault; "" when it was.
  virtual std::string why_not_fused() const { return {}; }
};

/// `optimizer` as a DeviceStepped, or nullptr when it is not one of make_optimizer's.
DeviceStepped* device_stepped(torch::optim::Optimizer& optimizer);

}  // namespace gputrain::train

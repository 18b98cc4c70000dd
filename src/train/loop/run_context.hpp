#pragma once
// Where and as whom a run trains: its resolved config, how it was asked to report, this rank, its
// device, and the hold on its folders. The Trainer's state is this context, the step engine
// (train/step/), the reporter (train/report/) and the data and model the engine works on.

#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "gputrain/core/directory_lock.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "rank_group.hpp"

namespace gputrain::train {

struct RunContext {
  Config config;
  std::string config_yaml;  // the config as saved with every checkpoint and as config.yaml
  TrainerOptions options;
  RankGroup ranks;  // world size 1 and no communicator in a plain run
  c10::Device device{c10::kCPU};
  // The writer's hold on logging.dir (and checkpoint.dir): from construction until fit() returns.
  std::vector<std::unique_ptr<core::DirectoryLock>> folder_locks;
  bool evaluating() const { return options.evaluate_only; }
};

}  // namespace gputrain::train

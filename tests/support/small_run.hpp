#pragma once
// A small deterministic CPU run for trainer tests: 96 synthetic samples, batch 16 -> 6 steps per
// epoch, 2 epochs; dropout on, so the RNG state matters for an exact resume. Its run directory is
// <tmp>/gputrain-trainer-<name>; `fresh` empties it first (false: keep what an earlier run left).

#include <filesystem>
#include <string>
#include <vector>

#include "gputrain/train/config.hpp"

namespace gputrain::test_support {

inline train::Config small_run(const std::string& name, std::vector<std::string> overrides = {}, bool fresh = true) {
  const auto dir = std::filesystem::temp_directory_path() / ("gputrain-trainer-" + name);
  if (fresh) std::filesystem::remove_all(dir);
  std::vector<std::string> all{"model.name=mlp",
                               "model.hidden=[32, 16]",
                               "model.dropout=0.2",
                               "data.shape=[10]",
                               "data.classes=3",
                               "data.samples=96",
                               "data.val_samples=32",
                               "train.epochs=2",
                               "train.batch_size=16",
                               "train.deterministic=true",
                               "device=cpu",
                               "logging.progress=off",
                               "logging.every_steps=2",
                               "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return train::load_config({{}, all, ""});
}

}  // namespace gputrain::test_support

#include "checkpoint_space.hpp"

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::train {

std::uint64_t parameter_bytes(Model& model) {
  std::uint64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += static_cast<std::uint64_t>(p.nbytes());
  return bytes;
}

std::uint64_t estimate_checkpoint_bytes(Model& model, const OptimizerConfig& optimizer) {
  std::uint64_t state = 0;
  for (const auto& [name, tensor] : model.named_state()) state += static_cast<std::uint64_t>(tensor.nbytes());
  const std::uint64_t parameters = parameter_bytes(model);
  const std::uint64_t slots = optimizer.name == "sgd" ? (optimizer.momentum > 0 ? 1 : 0) : 2;
  // Measured on this format: RNG states (~5 KiB), the config, the zip records per tensor.
  constexpr std::uint64_t kArchiveMargin = 256 * 1024;
  return state + slots * parameters + kArchiveMargin;
}

std::uint64_t CheckpointSpace::needed() const {
  const auto files = static_cast<std::uint64_t>(keep_last + 1 + (keeps_best ? 1 : 0));
  const std::uint64_t fullest = files * checkpoint_bytes + weights_bytes;
  return fullest > already_there ? fullest - already_there : 0;
}

void check_checkpoint_space(const CheckpointSpace& space, std::uint64_t available, const std::string& dir) {
  const std::uint64_t needed = space.needed();
  if (available >= needed) return;
  const std::string kept = std::to_string(space.keep_last) + " kept (checkpoint.keep_last), the next one while it is written" +
                           (space.keeps_best ? ", best.pt" : "") + " and the final weights";
  throw UsageError("the checkpoints of this run need about " + core::format_bytes(needed) + " free on the disk of '" + dir +
                       "', and it has " + core::format_bytes(available) + ": " + core::format_bytes(space.checkpoint_bytes) + " each, " +
                       kept + ". The run would train until its first save and then stop with nothing saved",
                   "free space there, point checkpoint.dir at a larger disk, or lower checkpoint.keep_last");
}

}  // namespace gputrain::train

#pragma once
// What to say when a checkpoint cannot be used: missing, not a checkpoint, or damaged; each with
// the checkpoint to use instead when one is beside it.

#include <string>

#include "checkpoint_integrity.hpp"

namespace gputrain::train {

/// "; runs/a/checkpoints has best.pt, step-00000008.pt": the checkpoints beside a missing one, or "".
std::string checkpoints_beside(const std::string& path);

/// `path` is not a checkpoint gputrain can read (a folder, a weights file, another zip archive);
/// `reader_message` is what the reader said ("" when none read it).
[[noreturn]] void throw_unreadable(const std::string& path, const std::string& reader_message);

/// `path` changed after it was written, or was cut short (CheckpointDamaged).
[[noreturn]] void throw_damaged(const std::string& path, const ArchiveDamage& damage);

}  // namespace gputrain::train

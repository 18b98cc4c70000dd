#pragma once
// Whether a checkpoint's bytes are still the ones written. LibTorch records a CRC-32 for every
// record of its zip archives but its reader never checks them, so a byte a disk or a copy changed
// loads as a wrong weight, and a run resumed or evaluated from it goes on with no sign.

#include <optional>
#include <string>

namespace gputrain::train {

/// What is wrong with a damaged zip archive: the record (empty when the archive's directory itself
/// is unreadable) and libzip's reason.
struct ArchiveDamage {
  std::string record;
  std::string why;
};

/// Reads every record of the zip archive at `path` through libzip, which checks each against its
/// CRC-32; the first damage found, or nullopt when every record is intact.
std::optional<ArchiveDamage> archive_damage(const std::string& path);

}  // namespace gputrain::train

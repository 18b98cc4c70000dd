#pragma once
// One run per folder: two runs writing the same run directory would interleave metrics.jsonl,
// rotate away each other's checkpoints and resume from each other's state.

#include <string>

namespace gputrain::core {

/// An exclusive advisory lock (flock) on `<folder>/.gputrain.lock`, held while the object lives.
/// The kernel drops it when the process ends however it ends, so a crashed run leaves no stale lock.
class DirectoryLock {
 public:
  /// Takes the lock on an existing folder, or throws UsageError naming the process that holds it
  /// and `key` (the config key that chose the folder) in the remedy.
  DirectoryLock(const std::string& folder, const std::string& key);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gputrain::core

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
  /// and `key` (the config key that chose the folder) in the remedy. On a file system that takes
  /// no locks (Lustre mounted without -o flock, gcsfuse) the folder is used unlocked: see unlocked().
  DirectoryLock(const std::string& folder, const std::string& key);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  /// Whether `folder` holds the lock file: a gputrain run has used it (the file outlives the run).
  static bool used_by_a_run(const std::string& folder);

  /// Throws Error (exit 1) when the folder is no longer the one locked: deleted, moved away, or
  /// replaced by another of its name, which another run may have taken since. A lock file removed
  /// from the folder itself (a cleaner of old files in /tmp) is made and taken again.
  void check_still_held();

  /// Why the folder is not locked: its file system refused the lock call itself (the system's
  /// words); "" when it is locked. A second run there would not be refused.
  const std::string& unlocked() const { return unlocked_; }
  const std::string& folder() const { return folder_; }

 private:
  void take(const std::string& path);
  std::string folder_, key_, unlocked_;
  unsigned long long device_ = 0, inode_ = 0;  // the folder's, when it was locked
  int fd_ = -1;
};

}  // namespace gputrain::core

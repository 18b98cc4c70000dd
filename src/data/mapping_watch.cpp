// The mapped data files, watched: SIGBUS in one becomes an error naming it; one rewritten in
// place is named by changed_in_place() (mapping_watch.hpp).
#include "mapping_watch.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace gputrain::data {
namespace {

constexpr std::uintptr_t kUnwatched = 0;
constexpr std::uintptr_t kChanging = 1;  // being filled or emptied

// The signal handler reads `begin`, `size` and the texts without a lock: `begin` is published last
// and withdrawn first. The rest is the lock's.
struct WatchedMapping {
  std::atomic<std::uintptr_t> begin{kUnwatched};
  std::size_t size = 0;
  std::string before;  // the error up to the byte's offset
  std::string after;   // from the offset on, the fix included
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  timespec modified{};
};

// Mappings alive at once: a run's features, labels and validation arrays, a few CSV parts parsed
// together. One past these goes unwatched.
constexpr std::size_t kWatchedMappings = 256;
WatchedMapping watched_mappings[kWatchedMappings];
std::mutex watch_lock;
struct sigaction previous_bus_action {};

void write_all(const char* text, std::size_t size) {
  while (size > 0) {
    const auto written = ::write(STDERR_FILENO, text, size);
    if (written <= 0) return;
    text += written;
    size -= static_cast<std::size_t>(written);
  }
}

// Async-signal-safe: it reads the places and calls write and _exit only.
void on_bus_error(int, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const auto& mapping : watched_mappings) {
    const auto begin = mapping.begin.load(std::memory_order_acquire);
    if (begin <= kChanging || address < begin || address - begin >= mapping.size) continue;
    char digits[24];
    std::size_t first = sizeof digits;
    for (auto offset = address - begin; first == sizeof digits || offset > 0; offset /= 10)
      digits[--first] = static_cast<char>('0' + offset % 10);
    write_all(mapping.before.data(), mapping.before.size());
    write_all(digits + first, sizeof digits - first);
    write_all(mapping.after.data(), mapping.after.size());
    ::_exit(1);
  }
  // Not a data file's fault: what would have happened without this handler. A fault repeats on
  // return and meets it; a SIGBUS sent by kill(2) is raised again, delivered once this returns.
  ::sigaction(SIGBUS, &previous_bus_action, nullptr);
  if (info->si_code <= 0) ::raise(SIGBUS);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_bus_error;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &previous_bus_action);
}

}  // namespace

int watch_mapping(const void* begin, std::size_t size, const std::string& path, const struct stat& file) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  const std::lock_guard<std::mutex> lock(watch_lock);
  for (std::size_t i = 0; i < kWatchedMappings; ++i) {
    auto& mapping = watched_mappings[i];
    if (mapping.begin.load(std::memory_order_relaxed) != kUnwatched) continue;
    mapping.begin.store(kChanging, std::memory_order_relaxed);
    mapping.size = size;
    mapping.before = "error: data file '" + path + "' changed while this run read it: byte ";
    mapping.after = " of its " + std::to_string(size) +
                    " can no longer be read (the file was cut short or rewritten in place, as numpy.save to the same path does, or "
                    "the disk failed to read it)\n"
                    "  fix: write new data to a new file and move it over the old one (mv, os.replace: a run keeps reading the file it "
                    "opened), or train from a copy; the same command resumes from the last checkpoint\n";
    mapping.path = path;
    mapping.device = file.st_dev;
    mapping.inode = file.st_ino;
    mapping.modified = file.st_mtim;
    mapping.begin.store(reinterpret_cast<std::uintptr_t>(begin), std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

void unwatch_mapping(int registration) {
  if (registration < 0) return;
  const std::lock_guard<std::mutex> lock(watch_lock);
  auto& mapping = watched_mappings[registration];
  mapping.begin.store(kChanging, std::memory_order_release);
  mapping.before.clear();
  mapping.after.clear();
  mapping.path.clear();
  mapping.begin.store(kUnwatched, std::memory_order_release);
}

std::vector<ChangedFile> changed_in_place() {
  std::vector<ChangedFile> changed;
  const std::lock_guard<std::mutex> lock(watch_lock);
  for (const auto& mapping : watched_mappings) {
    if (mapping.begin.load(std::memory_order_relaxed) <= kChanging) continue;
    struct stat now {};
    if (::stat(mapping.path.c_str(), &now) != 0 || now.st_dev != mapping.device || now.st_ino != mapping.inode) continue;
    const auto size = static_cast<std::size_t>(now.st_size);
    const bool same_time = now.st_mtim.tv_sec == mapping.modified.tv_sec && now.st_mtim.tv_nsec == mapping.modified.tv_nsec;
    if (size < mapping.size)  // within its last page, which reads as zeros past the end rather than faulting
      changed.push_back({mapping.path, "cut short to " + std::to_string(size) + " of its " + std::to_string(mapping.size) + " bytes"});
    else if (!same_time || size != mapping.size)
      changed.push_back({mapping.path, "rewritten in place"});
  }
  return changed;
}

}  // namespace gputrain::data

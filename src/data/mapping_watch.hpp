#pragma once
// The data files a run reads where they lie (memory maps), watched for what another program does
// to them meanwhile. Private to the data area and the training loop's data_file_watch callback.
// - A file cut short (numpy.save to the same path truncates it first), or a disk that fails to
//   read, makes a read of the lost bytes raise SIGBUS: "Bus error" and nothing else. A fault in a
//   watched mapping ends the process with an error naming the file and what to do instead.
// - A file rewritten in place at its size gives the steps a mix of old and new contents, silently:
//   changed_in_place() names such files.

#include <cstddef>
#include <string>
#include <vector>

struct stat;

namespace gputrain::data {

/// Registers `size` bytes at `begin`, mapped from `path`, whose fstat(2) was `file`; installs the
/// SIGBUS handler on the first call. Returns the registration for unwatch_mapping, or -1 when
/// every place is taken (a fault in that mapping then ends the process as without this).
int watch_mapping(const void* begin, std::size_t size, const std::string& path, const struct stat& file);

/// Forgets a registration, before its bytes are unmapped; -1 is ignored.
void unwatch_mapping(int registration);

/// A watched file changed in place: its path, and how ("cut short to 96 of its 4096 bytes",
/// "rewritten in place").
struct ChangedFile {
  std::string path;
  std::string how;
};

/// The watched files whose path still names the file that was mapped and whose size or
/// modification time has changed since. A file replaced by another (mv, os.replace) is not: its
/// mapping keeps the old contents whole.
std::vector<ChangedFile> changed_in_place();

}  // namespace gputrain::data

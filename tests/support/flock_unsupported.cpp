// LD_PRELOAD shim for the CLI tests: flock() answered as a file system without locks answers it
// (Lustre mounted without -o flock, a FUSE mount such as gcsfuse): ENOSYS.
#include <cerrno>

extern "C" int flock(int /*fd*/, int /*operation*/) {
  errno = ENOSYS;
  return -1;
}

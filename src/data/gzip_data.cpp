#include "gzip_data.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <new>

#include "gputrain/core/error.hpp"

namespace gputrain::data {
namespace {

UsageError bad_gzip(const std::string& path, const std::string& why) {
  return UsageError("'" + path + "' is not a valid gzip file: " + why, "copy or download it again (`gzip -t " + path + "` checks a file)");
}

// Closes the stream however inflating ends.
struct Inflater {
  z_stream stream{};
  Inflater() {
    if (inflateInit2(&stream, 15 + 16) != Z_OK) throw std::bad_alloc();  // 15 + 16: the largest window, gzip framing
  }
  ~Inflater() { inflateEnd(&stream); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

bool is_gzip(const unsigned char* bytes, std::size_t size) { return size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

std::string inflate_gzip(const unsigned char* bytes, std::size_t size, const std::string& path, const InflateProgress& progress) {
  constexpr std::size_t kPiece = std::size_t{16} << 20;  // compressed bytes given to zlib at a time
  std::string out;
  // The trailer holds the last member's size mod 2^32: a first guess at the room needed.
  if (size >= 18) {
    const unsigned char* t = bytes + size - 4;
    const std::size_t guess = t[0] | (t[1] << 8) | (t[2] << 16) | (std::size_t{t[3]} << 24);
    out.resize(std::min(guess + 1, size * 64 + 1024));
  } else {
    out.resize(1024);
  }
  Inflater z;
  std::size_t read = 0, written = 0, reported = 0;
  while (true) {
    if (written == out.size()) out.resize(out.size() * 2);
    // In pieces: zlib counts in 32-bit unsigned ints, and progress is said between them.
    z.stream.next_in = const_cast<Bytef*>(bytes + read);
    z.stream.avail_in = static_cast<uInt>(std::min(size - read, kPiece));
    z.stream.next_out = reinterpret_cast<Bytef*>(out.data() + written);
    z.stream.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - written, UINT_MAX));
    const uInt in_before = z.stream.avail_in, out_before = z.stream.avail_out;
    const int code = inflate(&z.stream, Z_NO_FLUSH);
    read += in_before - z.stream.avail_in;
    written += out_before - z.stream.avail_out;
    if (progress && read - reported >= kPiece) {
      reported = read;
      progress(read, size);
    }
    if (code == Z_STREAM_END) {
      // Another member may follow; zeros after the last one are padding (tape and some writers).
      if (read < size && is_gzip(bytes + read, size - read)) {
        inflateReset(&z.stream);
        continue;
      }
      if (std::all_of(bytes + read, bytes + size, [](unsigned char b) { return b == 0; })) break;
      throw bad_gzip(path, "bytes that are not gzip follow its end at byte " + std::to_string(read));
    }
    if (code == Z_DATA_ERROR)
      throw bad_gzip(path, std::string(z.stream.msg ? z.stream.msg : "corrupt data") + " at byte " + std::to_string(read));
    if (code == Z_MEM_ERROR) throw std::bad_alloc();
    if (code != Z_OK && code != Z_BUF_ERROR) throw bad_gzip(path, z.stream.msg ? z.stream.msg : "zlib error " + std::to_string(code));
    if (read == size && z.stream.avail_out != 0)
      throw bad_gzip(
          path, "it is cut short: the stream stops at byte " + std::to_string(size) + " before its end (an unfinished copy or download)");
  }
  if (progress) progress(size, size);
  out.resize(written);
  return out;
}

}  // namespace gputrain::data

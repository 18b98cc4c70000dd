#pragma once
// gzip'd data files (MNIST's .gz downloads, pandas' .csv.gz), told apart by their magic bytes and
// inflated into memory whole: the readers parse them as the plain files they hold.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace gputrain::data {

/// True when `bytes` start as a gzip stream does (0x1f 0x8b).
bool is_gzip(const unsigned char* bytes, std::size_t size);

/// How far inflating is: compressed bytes read, of all of them. An exception thrown from it (a stop
/// signal) ends the inflating and is passed on.
using InflateProgress = std::function<void(std::uint64_t read, std::uint64_t total)>;

/// Every gzip member of `bytes`, inflated (`cat a.gz b.gz` makes one file of two members, as gzip
/// -d reads it). Throws UsageError naming `path` for a corrupt or truncated stream.
std::string inflate_gzip(const unsigned char* bytes, std::size_t size, const std::string& path, const InflateProgress& progress = {});

}  // namespace gputrain::data

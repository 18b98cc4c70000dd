#pragma once
// Gathering rows of contiguous tables as wide words: the plan both the CUDA kernel
// (row_gather.cu) and its host check (tests/unit/data/test_row_gather.cpp) run word by word.
// Plain pointers and no LibTorch, so that nvcc compiles the kernel's file alone, in seconds.

#include <cstdint>
#include <initializer_list>

#ifdef __CUDACC__
#include <cassert>
#endif

#include "core/host_device.hpp"

namespace gputrain::data::row_gather {

/// One table whose rows are gathered: `source_rows` rows of `row_words` words of `word_bytes` each,
/// row i of `target` taking row indices[i] of `source`.
struct Table {
  const void* source = nullptr;
  void* target = nullptr;
  std::int64_t source_rows = 0;
  std::int64_t row_words = 0;
  int word_bytes = 1;
};

/// A launch gathers this many tables with the same indices: a batch's inputs and its targets.
inline constexpr int kMaxTables = 2;

/// The widest word (16, 8, 4, 2 or 1 bytes) that divides `row_bytes` and that every address in
/// `addresses` is aligned to: one GPU thread moves one word, so a uint8 image row moved as 16-byte
/// words takes a sixteenth of the loads.
inline int widest_word(std::int64_t row_bytes, std::initializer_list<const void*> addresses) {
  for (int width = 16; width > 1; width /= 2) {
    if (row_bytes % width != 0) continue;
    bool aligned = true;
    for (const void* a : addresses) aligned = aligned && reinterpret_cast<std::uintptr_t>(a) % static_cast<std::uintptr_t>(width) == 0;
    if (aligned) return width;
  }
  return 1;
}

/// The table that gathers rows of `row_bytes` from `source` (`source_rows` of them) into `target`,
/// in the widest word both addresses allow.
inline Table table_for(const void* source, void* target, std::int64_t source_rows, std::int64_t row_bytes) {
  const int word = widest_word(row_bytes, {source, target});
  return {source, target, source_rows, row_bytes / word, word};
}

/// Word i of the gathered rows of `table`, all rows' words counted in a row (row-major): the
/// division is the only per-word arithmetic, in 32 bits (`Index`) wherever the words allow.
template <typename Word, typename Index>
GPUTRAIN_HOST_DEVICE inline void copy_word(const Table& table, const std::int64_t* indices, Index i) {
  const auto row_words = static_cast<Index>(table.row_words);
  const Index row = i / row_words;
  const Index word = i - row * row_words;
  const std::int64_t from = indices[row];
#ifdef __CUDA_ARCH__
  // A bad index stops the kernel with a device-side assert, as LibTorch's index_select does,
  // rather than reading another allocation's bytes (row_gather.cu keeps asserts in Release).
  assert(from >= 0 && from < table.source_rows && "gather index out of range");
#endif
  static_cast<Word*>(table.target)[i] = static_cast<const Word*>(table.source)[from * table.row_words + static_cast<std::int64_t>(word)];
}

/// Sixteen bytes that move as one load and one store (as CUDA's uint4 does).
struct alignas(16) Word16 {
  std::uint32_t part[4];
};

/// The words one thread of `stride` threads copies: words first, first + stride, ... of `table`'s
/// gathered rows, in the table's word width. The kernel runs it as each thread of its grid; the
/// host check runs every thread of a small grid in turn.
template <typename Index>
GPUTRAIN_HOST_DEVICE inline void copy_thread_words(const Table& table, const std::int64_t* indices, Index rows, Index first, Index stride) {
  const Index words = rows * static_cast<Index>(table.row_words);
  switch (table.word_bytes) {  // one width for the whole table: a warp's threads never split here
    case 16:
      for (Index i = first; i < words; i += stride) copy_word<Word16>(table, indices, i);
      break;
    case 8:
      for (Index i = first; i < words; i += stride) copy_word<std::uint64_t>(table, indices, i);
      break;
    case 4:
      for (Index i = first; i < words; i += stride) copy_word<std::uint32_t>(table, indices, i);
      break;
    case 2:
      for (Index i = first; i < words; i += stride) copy_word<std::uint16_t>(table, indices, i);
      break;
    default:
      for (Index i = first; i < words; i += stride) copy_word<std::uint8_t>(table, indices, i);
      break;
  }
}

/// Whether every table's words can be counted in 32 bits (the kernel's fast index arithmetic),
/// with room for a grid-wide stride past the last word.
inline bool fits_32_bits(const Table* tables, int count, std::int64_t rows) {
  for (int t = 0; t < count; ++t)
    if (tables[t].row_words > 0 && rows > (std::int64_t{1} << 31) / tables[t].row_words) return false;
  return true;
}

#undef GPUTRAIN_HOST_DEVICE  // the templates above are parsed: the macro stays this header's

/// Gathers `rows` rows of each of `count` (1..kMaxTables) tables in one kernel launch on `stream`
/// (a cudaStream_t) of the current CUDA device. `indices` lives on that device. Returns nullptr, or
/// CUDA's message when the launch failed.
const char* gather_rows_on_gpu(const Table* tables, int count, const std::int64_t* indices, std::int64_t rows, void* stream);

}  // namespace gputrain::data::row_gather

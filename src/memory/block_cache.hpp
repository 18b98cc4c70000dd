#pragma once
// Freed CPU blocks kept for reuse, the CPU half of what the CUDA caching allocator does.
//
// Why: glibc serves every block above its mmap threshold (128 KiB at first) with a fresh mmap and
// gives it back with munmap, so each activation of a training step faults its pages in again and
// the kernel zeroes them: on a 2-core VM that was a quarter of a small CNN's step. A training loop
// frees and asks for the same sizes every step, so handing the same block back removes all of it.
//
// Blocks are matched by exact size (the sizes repeat step after step), the most recently freed
// first (its pages are the warmest), and pushed out oldest first when the cache outgrows its
// limit. Not thread-safe: the allocator calls it under its own lock, and frees what it returns
// outside that lock.

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gputrain::memory {

class BlockCache {
 public:
  using Deleter = void (*)(void*);

  /// A block as the wrapped allocator handed it out, and how to give it back.
  struct Block {
    void* data = nullptr;
    void* context = nullptr;
    Deleter deleter = nullptr;
    std::uint64_t bytes = 0;
  };

  /// The most recently kept block of exactly `bytes`, now no longer in the cache.
  std::optional<Block> take(std::uint64_t bytes);

  /// Keeps `block` for reuse, then pushes out the oldest blocks until at most `limit` bytes stay
  /// (the new block too, when it alone is over). Returns the pushed-out blocks, for the caller to free.
  std::vector<Block> keep(Block block, std::uint64_t limit);

  /// Pushes out the oldest blocks until at most `limit` bytes stay; 0 empties the cache.
  std::vector<Block> shrink_to(std::uint64_t limit);

  /// Bytes held by the cached blocks.
  std::uint64_t bytes() const { return bytes_; }

  std::size_t size() const { return blocks_.size(); }

 private:
  using Position = std::list<Block>::iterator;
  std::list<Block> blocks_;                                          // front: most recently kept
  std::unordered_map<std::uint64_t, std::deque<Position>> by_size_;  // per size, oldest first
  std::uint64_t bytes_ = 0;
};

}  // namespace gputrain::memory

#include "block_cache.hpp"

namespace gputrain::memory {

std::optional<BlockCache::Block> BlockCache::take(std::uint64_t bytes) {
  const auto found = by_size_.find(bytes);
  if (found == by_size_.end()) return std::nullopt;
  const Position newest = found->second.back();
  const Block block = *newest;
  found->second.pop_back();
  if (found->second.empty()) by_size_.erase(found);
  blocks_.erase(newest);
  bytes_ -= block.bytes;
  return block;
}

std::vector<BlockCache::Block> BlockCache::keep(Block block, std::uint64_t limit) {
  blocks_.push_front(block);
  by_size_[block.bytes].push_back(blocks_.begin());
  bytes_ += block.bytes;
  return shrink_to(limit);
}

std::vector<BlockCache::Block> BlockCache::shrink_to(std::uint64_t limit) {
  std::vector<Block> out;
  while (bytes_ > limit && !blocks_.empty()) {
    const Block oldest = blocks_.back();
    // The oldest block of any size is the oldest of its own size too: the front of its queue.
    auto same_size = by_size_.find(oldest.bytes);
    same_size->second.pop_front();
    if (same_size->second.empty()) by_size_.erase(same_size);
    blocks_.pop_back();
    bytes_ -= oldest.bytes;
    out.push_back(oldest);
  }
  return out;
}

}  // namespace gputrain::memory

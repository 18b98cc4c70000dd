#include "rank_data.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"

namespace gputrain::train {
namespace {

// A provenance checksum ("data.checksum": hex digits) as a number all ranks can compare; 0 where
// the source records none.
std::int64_t provenance_checksum(const data::Sources& sources, const std::string& key) {
  const auto it = sources.provenance.find(key);
  if (it == sources.provenance.end()) return 0;
  try {
    return static_cast<std::int64_t>(std::stoull(it->second, nullptr, 16) >> 1);  // 63 bits: one int64 without sign trouble
  } catch (const std::exception&) {
    return 0;
  }
}

// FNV-1a over 64 samples spread over the set, in their order: rows in another order (ORDER BY
// random()) or other values under the same count. A set held in memory hashes the samples' bytes,
// a streamed one their origins (file names). 0 for no set.
std::int64_t sampled_fingerprint(const data::Dataset* set) {
  if (!set || set->size() == 0) return 0;
  std::uint64_t hash = 14695981039346656037ull;
  const auto add = [&](const void* bytes, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<const unsigned char*>(bytes)[i]) * 1099511628211ull;
  };
  const auto whole = set->tensors();
  constexpr std::int64_t kSamples = 64;
  for (std::int64_t k = 0; k < kSamples; ++k) {
    const auto index = k * (set->size() - 1) / (kSamples - 1);
    if (whole) {
      for (const auto& t : {whole->inputs[index].contiguous(), whole->targets[index].contiguous()}) add(t.data_ptr(), t.nbytes());
    } else {
      const auto origin = set->origin(index);
      add(origin.data(), origin.size());
    }
  }
  return static_cast<std::int64_t>(hash >> 1);
}

std::string different_data_fix(const std::string& source) {
  if (source == "postgres")
    return "each rank runs data.query itself, in its own snapshot: another client changed the rows between their reads, or the query "
           "gives other rows each time (random(), now(), TABLESAMPLE); train on rows no one changes meanwhile, e.g. a copy "
           "(CREATE TABLE train_rows AS SELECT ...) or a WHERE that fixes the set (WHERE created_at < '2026-12-01')";
  return "every rank must read the same data: on several nodes, data.path must be one shared file (or identical copies), and no "
         "process may write it while the ranks start";
}

}  // namespace

void refuse_ranks_reading_different_data(RankGroup& ranks, const data::Sources& sources, const std::string& source) {
  if (!ranks.distributed()) return;
  const std::vector<std::int64_t> mine{sources.train->size(),
                                       sources.val ? sources.val->size() : 0,
                                       provenance_checksum(sources, "data.checksum"),
                                       provenance_checksum(sources, "data.val_checksum"),
                                       sampled_fingerprint(sources.train.get()),
                                       sampled_fingerprint(sources.val.get())};
  const auto all = ranks.communicator()->all_gather(mine, "the ranks' agreement on the data they read");
  const auto world = all.size() / mine.size();
  const char* names[] = {"training samples",
                         "validation samples",
                         "training rows' checksums",
                         "validation rows' checksums",
                         "64 training samples compared in order",
                         "64 validation samples compared in order"};
  for (std::size_t i = 0; i < mine.size(); ++i) {
    std::vector<std::int64_t> values;
    for (std::size_t r = 0; r < world; ++r) values.push_back(all[r * mine.size() + i]);
    const auto odd = std::find_if(values.begin(), values.end(), [&](std::int64_t v) { return v != values.front(); }) - values.begin();
    if (odd == static_cast<std::ptrdiff_t>(values.size())) continue;  // every rank alike
    const auto detail = i < 2 ? ": rank 0 read " + std::to_string(values.front()) + ", rank " + std::to_string(odd) + " " +
                                    std::to_string(values[static_cast<std::size_t>(odd)])
                              : ": rank 0's and rank " + std::to_string(odd) + "'s differ, with as many samples";
    throw UsageError(
        std::string("the ranks read different data (") + names[i] + detail + "), so their shards would skip and repeat samples",
        different_data_fix(source));
  }
}

}  // namespace gputrain::train

// data.streams' query splitting: the lexer that finds a query's top-level WHERE past quotes,
// comments, dollar quotes and sub-queries (restricted_to_blocks, on the user's data.query), and
// the readers of the server's EXPLAIN (FORMAT JSON) text. An input whose first line is JSON is
// read as a plan too. A rewrite must keep the query's text before its WHERE and end with the range;
// the tables' blocks dealt to streams must be read once each, in order.
#include <cstdlib>
#include <iostream>
#include <vector>

#include "data/postgres/pg_split.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gputrain::data::postgres;
  const std::string text(gputrain::fuzz::as_text(data, size));
  gputrain::fuzz::expect_read_or_refusal("restricted_to_blocks", [&] {
    for (const BlockRange range : {BlockRange{0, 7}, BlockRange{7, std::nullopt}}) {
      const auto rewritten = restricted_to_blocks(text, range);
      if (!rewritten) continue;
      const std::string tail = range.end ? "ctid < '(7,0)'::tid" : "ctid >= '(7,0)'::tid";
      if (rewritten->size() < tail.size() || rewritten->compare(rewritten->size() - tail.size(), tail.size(), tail) != 0 ||
          rewritten->compare(0, 6, text, 0, 6) != 0) {
        std::cerr << "restricted_to_blocks rewrote\n" << text << "\nas\n" << *rewritten << "\n";
        std::abort();
      }
    }
  });
  gputrain::fuzz::expect_read_or_refusal("restricted_to_table_blocks", [&] {
    const auto rewritten = restricted_to_table_blocks(text, "\"s\".\"p\"", BlockRange{0, 7});
    const std::string tail = "ctid < '(7,0)'::tid";
    if (rewritten && (rewritten->find(" ONLY \"s\".\"p\" AS ") == std::string::npos || rewritten->size() < tail.size() ||
                      rewritten->compare(rewritten->size() - tail.size(), tail.size(), tail) != 0)) {
      std::cerr << "restricted_to_table_blocks rewrote\n" << text << "\nas\n" << *rewritten << "\n";
      std::abort();
    }
  });
  gputrain::fuzz::expect_read_or_refusal("the EXPLAIN readers", [&] {
    (void)single_table_scan(text, "Seq Scan");
    (void)appended_scans(text, "Seq Scan");
    (void)planned_rows(text);
  });
  gputrain::fuzz::expect_read_or_refusal("block_ranges", [&] {
    std::uint64_t blocks = 0;
    for (std::size_t i = 0; i < size && i < 8; ++i) blocks = blocks << 8 | data[i];
    const int streams = size > 8 ? 1 + data[8] % 32 : 1;
    std::uint64_t next = 0;
    for (const auto& range : block_ranges(blocks, streams)) {
      if (range.first != next || (range.end && *range.end < range.first)) {  // the ranges tile the table
        std::cerr << "block_ranges(" << blocks << ", " << streams << ") leaves a gap or overlaps at block " << next << "\n";
        std::abort();
      }
      next = range.end.value_or(blocks);
    }
  });
  gputrain::fuzz::expect_read_or_refusal("deal_blocks", [&] {
    std::vector<std::uint64_t> blocks;  // up to 5 tables of up to 255 blocks, some empty
    for (std::size_t i = 9; i < size && i < 14; ++i) blocks.push_back(data[i] % 3 == 0 ? 0 : data[i]);
    const int streams = size > 8 ? 1 + data[8] % 32 : 1;
    std::vector<std::uint64_t> next(blocks.size(), 0);  // each table read once, in order, block after block
    std::vector<bool> done(blocks.size(), false);
    std::size_t last_table = 0;
    for (const auto& pieces : deal_blocks(blocks, streams))
      for (const auto& piece : pieces) {
        const bool fits = piece.table < blocks.size() && piece.table >= last_table && !done[piece.table] &&
                          piece.range.first == next[piece.table] && (!piece.range.end || *piece.range.end > piece.range.first);
        if (!fits) {
          std::cerr << "deal_blocks: table " << piece.table << " read out of order, twice or from block " << piece.range.first << "\n";
          std::abort();
        }
        last_table = piece.table;
        next[piece.table] = piece.range.end.value_or(blocks[piece.table]);
        done[piece.table] = !piece.range.end;
      }
    for (std::size_t t = 0; t < blocks.size(); ++t)
      if (!done[t]) {
        std::cerr << "deal_blocks: table " << t << " of " << blocks[t] << " blocks is not read to its end\n";
        std::abort();
      }
  });
  return 0;
}

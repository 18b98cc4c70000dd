// The VRAM cache's gather kernel, run on the host: every thread of a small grid in turn through the
// kernel's own per-thread code (row_gather.hpp), so the word widths, the index arithmetic and the
// grid-stride loop are checked on machines with no GPU. Only the launch itself needs one
// (tests/gpu/test_gpu_data.cpp).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "data/row_gather.hpp"

using namespace gputrain::data;

namespace {

std::int64_t row_bytes(const at::Tensor& rows) {
  return rows.size(0) > 0 ? rows.numel() / rows.size(0) * static_cast<std::int64_t>(rows.element_size()) : 0;
}

// Runs thread 0 .. threads-1 of a grid of `threads` threads, as the kernel's launch would.
template <typename Index>
void run_grid(const row_gather::Table& table, const at::Tensor& indices, Index threads) {
  for (Index first = 0; first < threads; ++first)
    row_gather::copy_thread_words<Index>(table, indices.data_ptr<std::int64_t>(), static_cast<Index>(indices.size(0)), first, threads);
}

at::Tensor bits(const at::Tensor& t) { return t.contiguous().view({-1}).view(at::kByte); }

// Gathers `rows` through the kernel's code with `threads` threads; the result against index_select's.
template <typename Index>
void expect_gathered(const at::Tensor& rows, const at::Tensor& indices, Index threads, int expected_word, const std::string& what) {
  auto out = at::empty_like(rows.index_select(0, indices));
  const auto table = row_gather::table_for(rows.data_ptr(), out.data_ptr(), rows.size(0), row_bytes(rows));
  EXPECT_EQ(table.word_bytes, expected_word) << what;
  out.view({-1}).view(at::kByte).fill_(0xAB);  // a word left uncopied shows
  run_grid<Index>(table, indices, threads);
  EXPECT_TRUE(at::equal(bits(out), bits(rows.index_select(0, indices)))) << what << ", " << threads << " threads";
}

}  // namespace

TEST(RowGather, TheWordIsTheWidestThatDividesTheRowAndAlignsEveryAddress) {
  alignas(64) static unsigned char buffer[128];
  const void* a = buffer;
  EXPECT_EQ(row_gather::widest_word(3072, {a, a}), 16);  // a CIFAR image in uint8
  EXPECT_EQ(row_gather::widest_word(1024, {a, a}), 16);  // 256 floats
  EXPECT_EQ(row_gather::widest_word(48, {a, a}), 16);
  EXPECT_EQ(row_gather::widest_word(24, {a, a}), 8);
  EXPECT_EQ(row_gather::widest_word(12, {a, a}), 4);
  EXPECT_EQ(row_gather::widest_word(6, {a, a}), 2);
  EXPECT_EQ(row_gather::widest_word(75, {a, a}), 1);
  EXPECT_EQ(row_gather::widest_word(1024, {a, buffer + 4}), 4);  // one address 4 past a 16-byte boundary
  EXPECT_EQ(row_gather::widest_word(1024, {buffer + 8, a}), 8);
  EXPECT_EQ(row_gather::widest_word(1024, {a, buffer + 1}), 1);
}

// Every dtype and row length, duplicate indices and NaN payloads: the bits come out as they went in,
// whatever the word and however many threads share the words (fewer than the words, a warp, more
// threads than words).
TEST(RowGather, EveryThreadOfTheGridCopiesItsWordsBitForBit) {
  const auto indices = at::tensor({4, 0, 4, 2, 1}, at::kLong);
  struct Case {
    at::Tensor rows;
    int word;
  };
  std::vector<Case> cases{
      {at::randint(0, 256, {5, 3, 32, 32}, at::kByte), 16},  // CIFAR-sized uint8 images
      {at::randn({5, 256}), 16},                             // the tabular case: 1 KiB of float
      {at::randint(0, 256, {5, 3, 4, 4}, at::kByte), 16},    // 48 bytes
      {at::randint(0, 256, {5, 3, 5, 5}, at::kByte), 1},     // 75 bytes: byte by byte
      {at::randint(0, 256, {5, 6}, at::kByte), 2},           // 6 bytes
      {at::randn({5, 3}), 4},                                // 12 bytes of float
      {at::randn({5, 6}).to(at::kBFloat16), 4},              // 12 bytes of bf16
      {at::randn({5, 6}).to(at::kDouble), 16},               // 48 bytes of double
      {at::randint(0, 2, {5, 8}, at::kBool), 8},
      {at::arange(5, at::kLong), 8},  // class labels: one word a row
      {at::randn({5, 1}).to(at::kHalf), 2},
  };
  cases[1].rows[1][7] = std::numeric_limits<float>::quiet_NaN();
  cases[1].rows.view(at::kInt)[2][9] = 0x7fc01234;  // a NaN with a payload
  for (std::size_t k = 0; k < cases.size(); ++k)
    for (const unsigned threads : {1u, 3u, 32u, 1000u}) {
      expect_gathered<unsigned>(cases[k].rows, indices, threads, cases[k].word, "case " + std::to_string(k));
      expect_gathered<unsigned long long>(cases[k].rows, indices, threads, cases[k].word, "case " + std::to_string(k) + ", 64-bit");
    }
}

// A view that starts off a word boundary (a storage offset) still gathers exactly, in narrower words.
TEST(RowGather, RowsOffTheWordBoundaryMoveInNarrowerWords) {
  const auto storage = at::randint(0, 256, {16 + 6 * 64}, at::kByte);
  const auto indices = at::tensor({5, 0, 3}, at::kLong);
  for (const auto& [offset, word] : std::vector<std::pair<std::int64_t, int>>{{0, 16}, {1, 1}, {2, 2}, {4, 4}, {8, 8}}) {
    const auto rows = storage.slice(0, offset, offset + 6 * 64).view({6, 64});
    expect_gathered<unsigned>(rows, indices, 32u, word, "offset " + std::to_string(offset));
  }
}

// 32-bit index arithmetic wherever every table's words (and one grid stride past them) fit.
TEST(RowGather, ThirtyTwoBitIndexingOnlyWhereTheWordsFit) {
  const auto tables = [](std::int64_t a, std::int64_t b) {
    return std::vector<row_gather::Table>{{nullptr, nullptr, 0, a, 16}, {nullptr, nullptr, 0, b, 8}};
  };
  const std::int64_t limit = std::int64_t{1} << 31;
  EXPECT_TRUE(row_gather::fits_32_bits(tables(1, 1).data(), 2, limit));
  EXPECT_FALSE(row_gather::fits_32_bits(tables(1, 1).data(), 2, limit + 1));
  EXPECT_TRUE(row_gather::fits_32_bits(tables(192, 1).data(), 2, limit / 192));       // 32 MiB chunks of CIFAR rows: far inside
  EXPECT_FALSE(row_gather::fits_32_bits(tables(1, 192).data(), 2, limit / 192 + 1));  // the second table counts too
  EXPECT_TRUE(row_gather::fits_32_bits(tables(1, 0).data(), 1, 1000));
  EXPECT_TRUE(row_gather::fits_32_bits(tables(0, 0).data(), 2, limit * 4));  // empty rows: no words at all
}

#pragma once
// Damaged copies of a good file, the way disks, downloads and copies damage them, handed one by one
// to a reader: cut short at every length up to 512 bytes (where the headers are) and at about 64
// more, and with 1-4 bytes overwritten at seeded places, mostly in the first and last 256 bytes
// (headers, and a zip's central directory), often with the values a length field turns absurd with.
// An accepted outcome is a read (the damage hit only values) or an Error, or SkippedSample for an
// image, whose message names the file; anything else fails the test: another exception, a
// std::bad_alloc from a trusted length, and (by ending the test binary) a crash.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/data/dataset.hpp"
#include "support/scratch_folder.hpp"

namespace gputrain::test_support {

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Flips one bit of the byte in the middle of the file at `path`, where a checkpoint's records are:
/// the damage a disk or a copy does, in place.
inline void flip_a_bit_midway(const std::string& path) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(path) / 2);
  char byte = 0;
  file.seekg(middle);
  file.get(byte);
  file.seekp(middle);
  file.put(static_cast<char>(byte ^ 0x10));
}

/// What a reader does with one damaged file: reads it, or throws.
using DamagedFileReader = std::function<void(const std::string& path)>;

/// Why one read's outcome is not an accepted one; empty when it is.
inline std::string unexpected_outcome(const DamagedFileReader& read, const std::string& path, const std::string& name) {
  try {
    read(path);
    return "";
  } catch (const Error& e) {
    const std::string message = e.what();
    return message.find(name) == std::string::npos ? "an error that does not name the file: " + message : "";
  } catch (const data::SkippedSample&) {
    return "";
  } catch (const std::bad_alloc&) {
    return "std::bad_alloc (a length field was trusted)";
  } catch (const std::exception& e) {
    return std::string("an exception that is no gputrain::Error: ") + e.what();
  }
}

/// The lengths to cut a file of `size` bytes at.
inline std::vector<std::size_t> cut_lengths(std::size_t size, std::size_t dense = 512) {
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n < std::min(size, dense); ++n) lengths.push_back(n);
  if (size > dense) {
    const std::size_t stride = std::max<std::size_t>(1, (size - dense) / 64);
    for (std::size_t n = dense; n < size; n += stride) lengths.push_back(n);
  }
  if (size > 0) lengths.push_back(size - 1);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

/// `copies` seeded copies of `bytes`, each with 1 to 4 bytes overwritten.
inline std::vector<std::string> overwritten_copies(const std::string& bytes, int copies, std::uint32_t seed) {
  std::mt19937 random(seed);
  const std::uint8_t extremes[] = {0x00, 0x7f, 0x80, 0xff};
  const std::size_t edge = std::min<std::size_t>(bytes.size(), 256);
  std::vector<std::string> damaged;
  for (int copy = 0; copy < copies && !bytes.empty(); ++copy) {
    std::string changed = bytes;
    const int count = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < count; ++i) {
      std::size_t at = 0;
      switch (random() % 4) {
        case 0:
          at = random() % changed.size();
          break;  // anywhere
        case 1:
          at = changed.size() - 1 - random() % edge;
          break;  // the end
        default:
          at = random() % edge;
          break;  // the start
      }
      changed[at] = static_cast<char>(random() % 2 ? extremes[random() % 4] : static_cast<std::uint8_t>(random()));
    }
    if (changed != bytes) damaged.push_back(std::move(changed));
  }
  return damaged;
}

/// Hands every damaged copy of the file at `good` to `read`, under the file's own name so that an
/// error naming the file names the copy. Reports at most five unexpected outcomes per file.
inline void read_damaged_copies(const std::string& good, const DamagedFileReader& read, int overwrites = 300) {
  const std::string bytes = file_bytes(good);
  ASSERT_FALSE(bytes.empty()) << good;
  const std::string name = std::filesystem::path(good).filename().string();
  ScratchFolder scratch("damaged-" + name);
  const std::filesystem::path path = scratch.path / name;

  write_file_bytes(path, bytes);
  ASSERT_EQ(unexpected_outcome(read, path.string(), name), "") << "the undamaged " << good;

  int failures = 0;
  const auto check = [&](const std::string& damaged, const std::string& how) {
    write_file_bytes(path, damaged);
    const std::string outcome = unexpected_outcome(read, path.string(), name);
    if (!outcome.empty() && ++failures <= 5) ADD_FAILURE() << good << " " << how << ": " << outcome;
  };
  for (const std::size_t length : cut_lengths(bytes.size())) check(bytes.substr(0, length), "cut to " + std::to_string(length) + " bytes");
  const auto copies = overwritten_copies(bytes, overwrites, 20261124u + static_cast<std::uint32_t>(bytes.size()));
  for (std::size_t i = 0; i < copies.size(); ++i) check(copies[i], "overwritten copy " + std::to_string(i));
}

}  // namespace gputrain::test_support

#pragma once
// What a test reads back as text: a whole file, the lines of one that hold a phrase, and whether a
// message holds one.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gputrain::test_support {

/// Whether `text` holds `part` anywhere.
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The file's bytes as they are on disk; empty when it cannot be opened.
inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// How many of the file's lines hold `part`.
inline int lines_containing(const std::filesystem::path& path, const std::string& part) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += contains(line, part);
  return n;
}

}  // namespace gputrain::test_support

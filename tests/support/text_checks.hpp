#pragma once
// What a test reads back as text: a whole file, and whether a message holds a phrase.

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

}  // namespace gputrain::test_support

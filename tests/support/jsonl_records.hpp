#pragma once
// The records of one kind ("start", "step", "oom", ...) from a run's metrics.jsonl, in file order.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gputrain::test_support {

inline std::vector<nlohmann::json> jsonl_records(const std::filesystem::path& jsonl, const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto record = nlohmann::json::parse(line);
    if (record["kind"] == kind) out.push_back(record);
  }
  return out;
}

}  // namespace gputrain::test_support

#include "leave_out_columns.hpp"

#include <algorithm>

#include "gputrain/core/units.hpp"

namespace gputrain::train {

std::string leave_out_fix(const DataConfig& data, const std::vector<std::string>& names, const std::vector<std::string>& left_out) {
  const bool one = left_out.size() == 1;
  const std::string them = one ? "it" : "them";
  if (names.empty()) return std::string("drop ") + (one ? "that column" : "those columns") + " from the inputs' array";
  if (!data.features.empty()) {
    std::vector<std::string> kept;  // the user's list, not the inputs: a column of categories is one name there
    for (const auto& name : data.features)
      if (std::find(left_out.begin(), left_out.end(), name) == left_out.end()) kept.push_back(name);
    return "leave " + them + " out of data.features: [" + core::join(kept) + "]";
  }
  auto excluded = data.exclude;
  excluded.insert(excluded.end(), left_out.begin(), left_out.end());
  return "leave " + them + " out with data.exclude: [" + core::join(excluded) + "]";
}

}  // namespace gputrain::train

#include "gputrain/checks/arch_support.hpp"

#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace gputrain::checks {

std::vector<std::string> parse_arch_flags(const std::string& flags) {
  static const std::regex kCode(R"(code=\[?((?:sm|compute)_[0-9]+[af]?))");
  std::vector<std::string> targets;
  for (auto it = std::sregex_iterator(flags.begin(), flags.end(), kCode); it != std::sregex_iterator(); ++it) {
    const std::string target = (*it)[1].str();
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) targets.push_back(target);
  }
  return targets;
}

std::vector<std::string> torch_cuda_arch_list() {
  try {
    // showConfig lists "NVCC architecture flags: -gencode;arch=...,code=sm_XY;..." of the loaded build.
    return parse_arch_flags(at::detail::getCUDAHooks().showConfig());
  } catch (const std::exception&) {
    return {};
  }
}

bool targets_cover(const std::vector<std::string>& targets, int major, int minor) {
  const int device = major * 10 + minor;
  for (const auto& target : targets) {
    const bool ptx = target.rfind("compute_", 0) == 0;
    std::string digits = target.substr(target.find('_') + 1);
    const char suffix = std::isalpha(static_cast<unsigned char>(digits.back())) ? digits.back() : '\0';
    if (suffix != '\0') digits.pop_back();
    const int built = std::stoi(digits);
    if (ptx) {
      if (suffix == '\0' && built <= device) return true;
      if (suffix != '\0' && built == device) return true;
    } else if (suffix == 'a') {
      if (built == device) return true;
    } else if (built / 10 == major && built % 10 <= minor) {
      return true;
    }
  }
  return false;
}

}  // namespace gputrain::checks

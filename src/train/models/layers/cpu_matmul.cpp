#include "cpu_matmul.hpp"

#include <ATen/ATen.h>

#include <fstream>
#include <sstream>

#include "gputrain/core/env.hpp"
#include "layer_switches.hpp"

namespace at::native {
// LibTorch's oneDNN matmul (ATen/native/mkldnn/Matmul.cpp): result = beta * result + alpha * mat1 @ mat2.
// Its header is not installed; declared weak, so that a LibTorch without it (another version,
// another signature) leaves it null and MKL runs instead of the link failing.
__attribute__((weak)) void mkldnn_matmul(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& result, float beta, float alpha);
}  // namespace at::native

namespace gputrain::train {
namespace {

constexpr std::int64_t kSmallestOneDnnSide = 64;

bool runs_on_onednn(const at::Tensor& a, const at::Tensor& b, CpuMatmul library) {
  const bool small = a.size(0) < kSmallestOneDnnSide || a.size(1) < kSmallestOneDnnSide || b.size(1) < kSmallestOneDnnSide;
  return library == CpuMatmul::onednn && !small && onednn_matmul_runs_here();
}

}  // namespace

bool onednn_matmul_available() { return &at::native::mkldnn_matmul != nullptr && at::hasMKLDNN(); }

bool onednn_matmul_runs_here() {
  static const bool runs = onednn_matmul_available() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                           __builtin_cpu_supports("avx512dq");
  return runs;
}

CpuMatmul cpu_matmul_for(const std::string& cpuinfo, bool onednn_available) {
  std::istringstream lines(cpuinfo);
  std::string line;
  bool amd = false, avx512 = false;
  while (std::getline(lines, line)) {
    if (line.rfind("vendor_id", 0) == 0) amd = line.find("AuthenticAMD") != std::string::npos;
    if (line.rfind("flags", 0) == 0) {
      std::istringstream flags(line.substr(line.find(':') + 1));
      for (std::string flag; flags >> flag;) avx512 = avx512 || flag == "avx512f";
      break;  // the first processor's flags: every core of one machine has the same
    }
  }
  return onednn_available && amd && avx512 ? CpuMatmul::onednn : CpuMatmul::mkl;
}

bool cpu_matmul_forced_to_mkl() {
  static const bool forced = core::env_choice("GPUTRAIN_CPU_MATMUL", {"mkl"}, "oneDNN's products where they pay, else MKL's").has_value();
  return forced;
}

CpuMatmul cpu_matmul_for_this_machine() {
  static const CpuMatmul choice = [] {
    // GPUTRAIN_CPU_MATMUL=mkl keeps LibTorch's own products: what bench/train_vs_pytorch.py
    // compares against to tell whether the oneDNN path still pays (docs/benchmarks.md).
    if (cpu_matmul_forced_to_mkl()) return CpuMatmul::mkl;
    std::ifstream file("/proc/cpuinfo");
    std::stringstream text;
    text << file.rdbuf();
    return cpu_matmul_for(text.str(), onednn_matmul_runs_here());
  }();
  return choice;
}

std::string to_string(CpuMatmul library) { return library == CpuMatmul::onednn ? "onednn" : "mkl"; }

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, CpuMatmul library) {
  if (!runs_on_onednn(a, b, library)) return at::mm(a, b);
  auto result = at::empty({a.size(0), b.size(1)}, a.options());
  at::native::mkldnn_matmul(a, b, result, 0.0f, 1.0f);
  return result;
}

at::Tensor addmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b, CpuMatmul library) {
  if (!runs_on_onednn(a, b, library)) return at::addmm(bias, a, b);
  auto result = bias.expand({a.size(0), b.size(1)}).contiguous();
  at::native::mkldnn_matmul(a, b, result, 1.0f, 1.0f);
  return result;
}

}  // namespace gputrain::train

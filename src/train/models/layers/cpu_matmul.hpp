#pragma once
// The CPU matrix products of the models' Linears (cpu_linear.hpp): at::mm, which runs
// MKL's sgemm, or oneDNN's matmul, which LibTorch carries too. On AMD processors MKL takes its AVX2
// path even where the processor has AVX-512; oneDNN's AVX-512 kernels ran the benchmark MLP's
// 256x512x256 products in half MKL's time on a Zen 5 (2026-11-26, docs/benchmarks.md). Both sum in
// fp32, in different orders, so their results differ in the last bits.

#include <ATen/core/Tensor.h>

#include <string>

namespace gputrain::train {

enum class CpuMatmul { mkl, onednn };

/// oneDNN on an AMD processor with AVX-512 where this LibTorch exports oneDNN's matmul; MKL
/// (LibTorch's own choice) elsewhere, or where GPUTRAIN_CPU_MATMUL=mkl says so. Decided once per
/// process, from /proc/cpuinfo.
CpuMatmul cpu_matmul_for_this_machine();

/// The same rule for a processor described as /proc/cpuinfo describes it (its first entry counts).
CpuMatmul cpu_matmul_for(const std::string& cpuinfo, bool onednn_available);

/// Whether this LibTorch exports oneDNN's matmul (and was built with oneDNN).
bool onednn_matmul_available();

/// Whether oneDNN's matmul runs on this CPU: LibTorch refuses it without AVX-512 (BW, VL and DQ).
/// A product asked of oneDNN elsewhere runs on MKL.
bool onednn_matmul_runs_here();

/// "mkl" or "onednn".
std::string to_string(CpuMatmul library);

/// a @ b for 2-d float CPU tensors (either may be a transposed view). With oneDNN, products with a
/// side under 64 stay MKL's, which is as fast there or faster.
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, CpuMatmul library);

/// bias + a @ b, with `bias` a row broadcast over the result's rows (as at::addmm); oneDNN adds it
/// in the product's own pass.
at::Tensor addmm(const at::Tensor& bias, const at::Tensor& a, const at::Tensor& b, CpuMatmul library);

}  // namespace gputrain::train

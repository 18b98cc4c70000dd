#pragma once
// Half precision on a CPU: LibTorch computes bf16 and fp16 with vector instructions only where
// the CPU has them (AVX512-BF16 or AMX-BF16; AVX512-FP16 or AMX-FP16). Elsewhere it converts in
// software, and a step takes many times fp32's: on a 2-core AMD EPYC without them, 2026-12-01,
// bf16-mixed ran configs/mlp.yaml 14x and configs/transformer.yaml 16x slower than fp32.

#include <string>

#include "gputrain/train/config.hpp"

namespace gputrain::train {

/// The CPU's name and whether it computes bf16 and fp16 in vector instructions.
struct CpuHalfSupport {
  std::string cpu_name;
  bool bf16 = false;  ///< AVX512-BF16 or AMX-BF16
  bool fp16 = false;  ///< AVX512-FP16 or AMX-FP16
};

/// This machine's, as LibTorch's cpuinfo reads it.
CpuHalfSupport cpu_half_support();

/// The note for a CPU run in `precision` on a CPU that lacks its instructions, naming the
/// precision that trains faster there; "" for fp32 or a CPU that has them.
std::string cpu_precision_note(Precision precision, const CpuHalfSupport& cpu);

}  // namespace gputrain::train

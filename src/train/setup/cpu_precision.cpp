#include "cpu_precision.hpp"

#include <ATen/cpu/Utils.h>

namespace gputrain::train {

CpuHalfSupport cpu_half_support() {
  const auto capabilities = at::cpu::get_cpu_capabilities();
  const auto flag = [&](const char* name) {
    const auto it = capabilities.find(name);
    return it != capabilities.end() && it->second.isBool() && it->second.toBool();
  };
  const auto name = capabilities.find("cpu_name");
  return {name != capabilities.end() && name->second.isString() ? name->second.toStringRef() : "this CPU",
          flag("avx512_bf16") || flag("amx_bf16"), flag("avx512_fp16") || flag("amx_fp16")};
}

std::string cpu_precision_note(Precision precision, const CpuHalfSupport& cpu) {
  if (precision == Precision::fp16_mixed && !cpu.fp16)
    return "train.precision fp16-mixed on the CPU (" + cpu.cpu_name +
           ", without AVX512-FP16 or AMX-FP16): LibTorch computes fp16 there without vector instructions, so steps take many "
           "times longer than in fp32 (a ResNet-18 step 35x as long on an AMD Zen 3); --set train.precision=" +
           (cpu.bf16 ? "bf16-mixed (this CPU has bf16 instructions) or fp32" : "fp32") + " trains faster here";
  if (precision == Precision::bf16_mixed && !cpu.bf16)
    return "train.precision bf16-mixed on the CPU (" + cpu.cpu_name +
           ", without AVX512-BF16 or AMX-BF16): LibTorch converts bf16 in software there, so steps take many times longer than "
           "in fp32 (an MLP step 14x, a transformer's 16x on a 2-core AMD EPYC); --set train.precision=fp32 trains faster here";
  return "";
}

}  // namespace gputrain::train

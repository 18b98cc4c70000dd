// performance.*: matmul TFLOPS by precision and memory/PCIe bandwidth, each beside the figure this
// GPU model should reach; at --level full, a sustained burn that watches clocks, heat and ECC.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "check_sets.hpp"
#include "gputrain/checks/gpu_specs.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/dist/bus_bandwidth.hpp"
#include "tensor_options.hpp"

namespace gputrain::checks {
namespace {

using core::format_fixed;
constexpr double kWarnFraction = 0.70;  // below 70 % of the expected figure is worth a look

/// Median milliseconds of `body` over `repeats` timed runs (after one warm-up), CUDA events on
/// the current stream. The median resists one-off hiccups the way the benchmarks' medians do.
double median_ms(int index, int repeats, const std::function<void()>& body) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index));
  body();
  stream.synchronize();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    c10::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
    start.record(stream);
    body();
    end.record(stream);
    end.synchronize();
    times.push_back(start.elapsed_time(end));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Result judge(const std::string& what, double value, const std::string& unit, std::optional<double> expected, const std::string& remedy) {
  std::vector<Figure> figures{{"measured", value, unit, expected}};
  std::string detail = what + ": " + format_fixed(value, 1) + " " + unit;
  if (!expected || *expected <= 0) return pass(detail + " (no reference figure for this GPU model)", figures);
  const double fraction = value / *expected;
  detail += " = " + format_fixed(fraction * 100, 0) + " % of " + format_fixed(*expected, 1) + " " + unit;
  if (fraction < kWarnFraction) return warn(detail, remedy, figures);
  return pass(detail, figures);
}

enum class Precision { fp32, tf32, bf16, fp16 };

Result check_matmul(const device::GpuInfo& gpu, Precision precision, Level level) {
  const int index = gpu.index;
  const auto spec = find_gpu_spec(gpu.name);
  const bool low = precision == Precision::bf16 || precision == Precision::fp16;
  const at::ScalarType dtype = precision == Precision::bf16 ? at::kBFloat16 : precision == Precision::fp16 ? at::kHalf : at::kFloat;
  if (precision == Precision::bf16 && gpu.cc_major < 8) return skip("bf16 tensor cores need compute capability 8.0+");
  if (precision == Precision::tf32 && gpu.cc_major < 8) return skip("TF32 needs compute capability 8.0+");
  const std::int64_t n = 8192;
  auto& context = at::globalContext();
  const bool tf32_before = context.allowTF32CuBLAS();
  context.setAllowTF32CuBLAS(precision == Precision::tf32);
  double ms = 0;
  try {
    const at::Tensor a = at::randn({n, n}, on_gpu(index, dtype));
    const at::Tensor b = at::randn({n, n}, on_gpu(index, dtype));
    at::Tensor c = at::empty({n, n}, on_gpu(index, dtype));
    const int per_run = low ? 20 : 5;
    ms = median_ms(index, level == Level::full ? 10 : 3,
                   [&] {
                     for (int i = 0; i < per_run; ++i) at::mm_out(c, a, b);
                   }) /
         per_run;
  } catch (...) {
    context.setAllowTF32CuBLAS(tf32_before);
    throw;
  }
  context.setAllowTF32CuBLAS(tf32_before);
  const double tflops = 2.0 * n * n * n / (ms * 1e-3) / 1e12;
  std::optional<double> expected;
  const char* name = "fp32";
  if (spec) {
    switch (precision) {
      case Precision::fp32:
        expected = spec->fp32_tflops;
        break;
      case Precision::tf32:
        expected = spec->tf32_tflops;
        name = "tf32";
        break;
      case Precision::bf16:
        expected = spec->bf16_tflops;
        name = "bf16";
        break;
      case Precision::fp16:
        expected = spec->fp16_tflops;
        name = "fp16";
        break;
    }
  } else {
    name = precision == Precision::tf32 ? "tf32" : precision == Precision::bf16 ? "bf16" : precision == Precision::fp16 ? "fp16" : "fp32";
  }
  return judge(std::string(name) + " matmul 8192^3", tflops, "TFLOPS", expected,
               "look for throttling (gpu checks), other processes on the GPU (`nvidia-smi`), or a power cap");
}

Result check_device_copy(const device::GpuInfo& gpu, Level level) {
  const std::int64_t bytes = (level == Level::full ? 2048LL : 512LL) << 20;
  const at::Tensor src = at::empty({bytes}, on_gpu(gpu.index, at::kByte)).fill_(7);
  at::Tensor dst = at::empty({bytes}, on_gpu(gpu.index, at::kByte));
  const double ms = median_ms(gpu.index, 5, [&] { dst.copy_(src); });
  const double gbps = 2.0 * double(bytes) / (ms * 1e-3) / 1e9;  // each byte is read once and written once
  const auto spec = find_gpu_spec(gpu.name);
  return judge("device-to-device copy (read + write)", gbps, "GB/s",
               spec ? std::optional<double>(spec->memory_bandwidth_gbps) : std::nullopt,
               "memory clocks may be lowered: check `nvidia-smi -q -d CLOCK` and the gpu throttling check");
}

Result check_host_copy(const device::GpuInfo& gpu, bool to_device, bool pinned, Level level) {
  const std::int64_t bytes = (level == Level::full ? 1024LL : 256LL) << 20;
  at::Tensor host = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned)).fill_(3);
  at::Tensor device_buffer = at::empty({bytes}, on_gpu(gpu.index, at::kByte));
  at::Tensor& destination = to_device ? device_buffer : host;
  const at::Tensor& source = to_device ? host : device_buffer;
  const double ms = median_ms(gpu.index, 5, [&] { destination.copy_(source, pinned); });
  const double gbps = double(bytes) / (ms * 1e-3) / 1e9;
  const std::string what = std::string(to_device ? "host-to-device" : "device-to-host") + (pinned ? " (pinned)" : " (pageable)");
  std::optional<double> expected;
  if (pinned && gpu.pcie) expected = pcie_bandwidth_gbps(gpu.pcie->max_generation, gpu.pcie->max_width);
  if (!pinned) {
    return pass(what + ": " + format_fixed(gbps, 1) + " GB/s (pageable copies go through a bounce buffer; pin host memory for speed)",
                {{"measured", gbps, "GB/s", {}}});
  }
  return judge(what, gbps, "GB/s", expected,
               "check the PCIe link (gpu.*.pcie), the NUMA node (`nvidia-smi topo -m`; bind with numactl), and IOMMU settings");
}

// --level full: a sustained bf16 (fp16 before Ampere) matmul burn; watches clocks, temperature,
// throttling and ECC counters once a second through the driver.
Result check_sustained(const device::GpuInfo& gpu) {
  using clock = std::chrono::steady_clock;
  const at::ScalarType dtype = gpu.cc_major >= 8 ? at::kBFloat16 : at::kHalf;
  const std::int64_t n = 8192;
  const at::Tensor a = at::randn({n, n}, on_gpu(gpu.index, dtype));
  const at::Tensor b = at::randn({n, n}, on_gpu(gpu.index, dtype));
  at::Tensor c = at::empty({n, n}, on_gpu(gpu.index, dtype));
  const bool ecc_known = gpu.ecc && gpu.ecc->uncorrected_volatile;
  const std::uint64_t ecc_before = ecc_known ? *gpu.ecc->uncorrected_volatile : 0;
  std::vector<double> tflops_per_second;
  int min_clock = 1 << 30, max_temp = 0;
  std::uint64_t throttled = 0, power_capped = 0;
  std::optional<std::uint64_t> ecc_after;
  const auto started = clock::now();
  while (clock::now() - started < std::chrono::seconds(40)) {
    const double ms = median_ms(gpu.index, 1, [&] {
      for (int i = 0; i < 20; ++i) at::mm_out(c, a, b);
    });
    tflops_per_second.push_back(20 * 2.0 * n * n * n / (ms * 1e-3) / 1e12);
    for (const auto& now : device::discover_gpus().gpus) {
      if (now.uuid != gpu.uuid) continue;
      if (now.sm_clock_mhz) min_clock = std::min(min_clock, *now.sm_clock_mhz);
      if (now.temperature_c) max_temp = std::max(max_temp, *now.temperature_c);
      if (now.throttle_reasons) {
        const auto reasons = *now.throttle_reasons;
        throttled |= device::harmful_throttle_reasons_under_load(reasons);
        power_capped |= device::harmful_throttle_reasons(reasons) & ~device::harmful_throttle_reasons_under_load(reasons);
      }
      if (now.ecc) ecc_after = now.ecc->uncorrected_volatile;
    }
  }
  const std::size_t fifth = std::max<std::size_t>(1, tflops_per_second.size() / 5);
  auto mean = [](auto begin, auto end) { return std::accumulate(begin, end, 0.0) / double(std::distance(begin, end)); };
  const double early = mean(tflops_per_second.begin(), tflops_per_second.begin() + fifth);
  const double late = mean(tflops_per_second.end() - fifth, tflops_per_second.end());
  std::vector<Figure> figures{
      {"tflops_start", early, "TFLOPS", {}}, {"tflops_end", late, "TFLOPS", {}}, {"max_temperature", double(max_temp), "C", {}}};
  if (min_clock < (1 << 30)) figures.push_back({"min_sm_clock", double(min_clock), "MHz", {}});
  std::string detail =
      "40 s burn: " + format_fixed(early, 0) + " -> " + format_fixed(late, 0) + " TFLOPS, max " + std::to_string(max_temp) + " C";
  if (min_clock < (1 << 30)) detail += ", SM clock >= " + std::to_string(min_clock) + " MHz";
  // At full load a GPU holds its power limit by design; a fall in throughput below says whether it costs.
  if (power_capped != 0) detail += "; held at its power limit (sw_power_cap), as a fully loaded GPU is";
  if (ecc_known && ecc_after && *ecc_after > ecc_before) {
    return fail(detail + "; uncorrected ECC errors rose during the burn", "drain the node and have the GPU serviced", figures);
  }
  if (throttled != 0) {
    std::string names;
    for (const auto& name : device::throttle_reason_names(throttled)) names += (names.empty() ? "" : ", ") + name;
    return warn(detail + "; throttled under load: " + names, "improve cooling or raise the power limit if allowed", figures);
  }
  if (late < 0.9 * early) {
    return warn(detail + "; throughput fell over 10 % under sustained load", "check cooling and power delivery", figures);
  }
  return pass(detail, figures);
}

}  // namespace

// As nccl-tests' all_reduce_perf reports it: busbw = algbw x 2(n-1)/n, comparable with the links.
static Result check_nccl_all_reduce(const Context& context, Level level) {
  const int gpus = static_cast<int>(context.inventory.gpus.size());
  if (gpus < 2) return skip("one GPU: there is no all-reduce between GPUs to measure");
  const std::int64_t bytes = level == Level::full ? (1ll << 30) : (256ll << 20);
  const auto f = dist::measure_nccl_all_reduce(gpus, bytes, level == Level::full ? 20 : 10);
  char detail[256];
  std::snprintf(detail, sizeof detail, "%d GPUs, %s per all-reduce: busbw %.1f GB/s (algbw %.1f GB/s, %.2f ms each)", gpus,
                core::format_bytes(static_cast<std::uint64_t>(f.bytes)).c_str(), f.busbw_gbps, f.algbw_gbps, f.seconds * 1e3);
  return pass(detail, {{"busbw", f.busbw_gbps, "GB/s", std::nullopt}, {"algbw", f.algbw_gbps, "GB/s", std::nullopt}});
}

std::vector<Check> performance_checks(const Context& context) {
  std::vector<Check> checks;
  const Level level = context.level;
  for (const auto& gpu : context.inventory.gpus) {
    const std::string prefix = "performance." + std::to_string(gpu.index) + ".";
    const std::string label = " (GPU " + std::to_string(gpu.index) + ")";
    auto add = [&](const std::string& id, const std::string& title, const std::function<Result()>& body, int seconds) {
      checks.push_back(
          {prefix + id, "performance", title + label, std::chrono::seconds(seconds), [body](const Context&) { return body(); }});
    };
    add(
        "matmul_fp32", "fp32 matmul TFLOPS", [gpu, level] { return check_matmul(gpu, Precision::fp32, level); }, 30);
    add(
        "matmul_tf32", "tf32 matmul TFLOPS", [gpu, level] { return check_matmul(gpu, Precision::tf32, level); }, 30);
    add(
        "matmul_bf16", "bf16 matmul TFLOPS", [gpu, level] { return check_matmul(gpu, Precision::bf16, level); }, 30);
    add(
        "matmul_fp16", "fp16 matmul TFLOPS", [gpu, level] { return check_matmul(gpu, Precision::fp16, level); }, 30);
    add(
        "d2d_bandwidth", "device memory bandwidth", [gpu, level] { return check_device_copy(gpu, level); }, 20);
    add(
        "h2d_pinned", "host-to-device bandwidth, pinned", [gpu, level] { return check_host_copy(gpu, true, true, level); }, 20);
    add(
        "d2h_pinned", "device-to-host bandwidth, pinned", [gpu, level] { return check_host_copy(gpu, false, true, level); }, 20);
    add(
        "h2d_pageable", "host-to-device bandwidth, pageable", [gpu, level] { return check_host_copy(gpu, true, false, level); }, 30);
    add(
        "d2h_pageable", "device-to-host bandwidth, pageable", [gpu, level] { return check_host_copy(gpu, false, false, level); }, 30);
    if (level == Level::full)
      add(
          "sustained", "sustained load: clocks, heat, ECC", [gpu] { return check_sustained(gpu); }, 90);
  }
  if (!context.inventory.gpus.empty())
    checks.push_back({"performance.nccl_allreduce", "performance", "NCCL all-reduce bus bandwidth between the GPUs",
                      std::chrono::seconds(60), [level](const Context& c) { return check_nccl_all_reduce(c, level); }});
  return checks;
}

}  // namespace gputrain::checks

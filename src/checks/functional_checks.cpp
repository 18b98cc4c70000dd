// functional.*: the GPU really computes: allocator, bit-exact copies, cuDNN, a mixed-precision
// training step, gputrain's own gather and batch-norm kernels, and NCCL all-reduce across local GPUs.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>

#include "check_sets.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/device_cache.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "tensor_options.hpp"

namespace gputrain::checks {
namespace {

using core::format_fixed;

// The caching allocator's own count (memory::memory_figures sets the allocator up first).
std::int64_t allocated_bytes(int index) {
  const c10::Device gpu(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  return static_cast<std::int64_t>(memory::memory_figures(gpu, /*with_limit=*/false).allocated);
}

Result check_allocator(int index) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  constexpr std::int64_t kBytes = 256LL << 20;
  const std::int64_t before = allocated_bytes(index);
  std::int64_t during = 0;
  {
    at::Tensor block = at::empty({kBytes}, on_gpu(index, at::kByte));
    block.fill_(1);
    during = allocated_bytes(index);
  }
  const std::int64_t after = allocated_bytes(index);
  memory::release_cached_memory(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
  const std::string detail = "allocated 256 MiB: allocator stats went " + std::to_string(before >> 20) + " -> " +
                             std::to_string(during >> 20) + " -> " + std::to_string(after >> 20) + " MiB";
  if (during - before < kBytes || after != before) {
    return fail(detail + " (expected +256 MiB, then back)",
                "the caching allocator misbehaves: check for another process "
                "corrupting memory, update the driver, report with `gputrain --version`");
  }
  return pass(detail);
}

Result check_round_trip(int index) {
  const at::Tensor host = at::randint(0, 256, {64LL << 20}, at::TensorOptions().dtype(at::kByte));
  const at::Tensor back = host.to(on_gpu(index, at::kByte)).to(at::kCPU);
  if (!at::equal(host, back)) {
    const auto differing = (host != back).sum().item<std::int64_t>();
    return fail(std::to_string(differing) + " of 64 MiB bytes changed on a host -> GPU -> host copy",
                "memory or PCIe faults: run `nvidia-smi -q -d ECC` and `dmesg | grep -i xid`; service the GPU if it repeats");
  }
  return pass("64 MiB host -> GPU -> host copy is bit-exact");
}

// The VRAM cache's batches come from gputrain's own kernel (src/data/row_gather.cu), not LibTorch's:
// CIFAR-sized uint8 images and their labels gathered on this GPU, against the CPU's index_select.
Result check_cache_gather(int index) {
  constexpr std::int64_t kRows = 4096;
  const auto cpu = at::TensorOptions().dtype(at::kByte);
  const data::TensorDataset set{at::randint(0, 256, {kRows, 3, 32, 32}, cpu), at::randint(0, 10, {kRows}, cpu.dtype(at::kLong))};
  const data::DeviceCache cache(set, data::CacheMode::vram, c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
  const auto indices = at::randperm(kRows, cpu.dtype(at::kLong));
  const auto got = cache.gather(indices);
  const bool same = at::equal(got.inputs.cpu(), set.inputs.index_select(0, indices)) &&
                    at::equal(got.targets.cpu(), set.targets.index_select(0, indices));
  const std::string moved = "the VRAM cache's gather kernel moved " + std::to_string(kRows) + " images of 3 KiB";
  if (!same)
    return fail(moved + " and got some bytes wrong",
                "set data.cache: ram (batches are then gathered on the host) and report this with `gputrain --version`");
  return pass(moved + " and their labels bit-exactly");
}

Result check_cudnn_conv(int index) {
  at::manual_seed(0);
  const at::Tensor input = at::randn({8, 16, 32, 32});
  const at::Tensor weight = at::randn({32, 16, 3, 3}) * 0.1;
  const at::Tensor reference = at::conv2d(input, weight, {}, 1, 1);
  auto& context = at::globalContext();
  const bool tf32 = context.allowTF32CuDNN();
  context.setAllowTF32CuDNN(false);  // compare full fp32 against the CPU
  at::Tensor gpu_result;
  try {
    gpu_result = at::conv2d(input.to(on_gpu(index)), weight.to(on_gpu(index)), {}, 1, 1).cpu();
  } catch (...) {
    context.setAllowTF32CuDNN(tf32);
    throw;
  }
  context.setAllowTF32CuDNN(tf32);
  const double error = (gpu_result - reference).abs().max().item<double>() / reference.abs().max().item<double>();
  const std::vector<Figure> figures{{"relative_error", error, "", {}}};
  if (!context.userEnabledCuDNN()) return warn("cuDNN is disabled in this process", "do not set cudnn.enabled=false", figures);
  if (error > 1e-4) {
    return fail("cuDNN convolution differs from the CPU by " + format_fixed(error * 100, 4) + " %",
                "reinstall the torch wheel (scripts/bootstrap.sh) and update the driver", figures);
  }
  return pass("cuDNN 3x3 convolution matches the CPU (relative error " + format_fixed(error, 8) + ")", figures);
}

// A tiny regression trained for a few steps under autocast; fp16 uses loss scaling on the same
// ATen ops the trainer's GradScaler uses.
Result check_mixed_precision(int index, at::ScalarType dtype) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  at::manual_seed(0);
  const auto opts = on_gpu(index);
  const at::Tensor x = at::randn({512, 64}, opts);
  const at::Tensor y = at::matmul(x, at::randn({64, 1}, opts)).tanh();
  at::Tensor w1 = (at::randn({64, 128}, opts) * 0.1).requires_grad_();
  at::Tensor w2 = (at::randn({128, 1}, opts) * 0.1).requires_grad_();
  const bool scaled = dtype == at::kHalf;
  at::Tensor scale = at::full({1}, 65536.0, opts);
  at::Tensor growth_tracker = at::zeros({1}, on_gpu(index, at::kInt));
  int skipped = 0;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    at::autocast::increment_nesting();
    at::Tensor loss;
    try {
      const at::Tensor prediction = at::matmul(at::relu(at::matmul(x, w1)), w2);
      loss = (prediction.to(at::kFloat) - y).pow(2).mean();
    } catch (...) {
      at::autocast::decrement_nesting();
      at::autocast::set_autocast_enabled(at::kCUDA, false);
      throw;
    }
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    (scaled ? loss * scale : loss).backward();
    std::vector<at::Tensor> grads{w1.grad(), w2.grad()};
    bool finite = true;
    if (scaled) {
      at::Tensor found_inf = at::zeros({1}, opts);
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale.reciprocal());
      finite = found_inf.item<float>() == 0.0f;
      at::_amp_update_scale_(scale, growth_tracker, found_inf, 2.0, 0.5, 2000);
    }
    {
      at::NoGradGuard no_grad;
      if (finite) {
        w1.sub_(grads[0], 0.1);
        w2.sub_(grads[1], 0.1);
      } else {
        ++skipped;
      }
      w1.mutable_grad().zero_();
      w2.mutable_grad().zero_();
    }
  }
  const std::string name = dtype == at::kHalf ? "fp16" : "bf16";
  const std::vector<Figure> figures{{"loss_first", first, "", {}}, {"loss_last", last, "", {}}};
  const std::string detail = name + " autocast step" + (scaled ? " with loss scaling" : "") + ": loss " + format_fixed(first, 4) + " -> " +
                             format_fixed(last, 4) + " in 60 steps" +
                             (skipped ? " (" + std::to_string(skipped) + " skipped for inf/nan)" : "");
  if (!(last < first * 0.5)) {
    return fail(detail + "; the loss did not fall", "mixed precision is broken here: update the driver and torch wheel", figures);
  }
  return pass(detail, figures);
}

// NCCL in one process over every local GPU (ncclCommInitAll), through the libnccl LibTorch loaded.
Result check_nccl_all_reduce(const Context& context) {
  const int count = static_cast<int>(context.inventory.gpus.size());
  using Comm = void*;
  void* nccl = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (nccl == nullptr) nccl = dlopen("libnccl.so.2", RTLD_LAZY);
  if (nccl == nullptr) return fail("libnccl.so.2 cannot be loaded", "reinstall the torch wheel (scripts/bootstrap.sh)");
  auto init_all = reinterpret_cast<int (*)(Comm*, int, const int*)>(dlsym(nccl, "ncclCommInitAll"));
  auto all_reduce = reinterpret_cast<int (*)(const void*, void*, size_t, int, int, Comm, void*)>(dlsym(nccl, "ncclAllReduce"));
  auto group_start = reinterpret_cast<int (*)()>(dlsym(nccl, "ncclGroupStart"));
  auto group_end = reinterpret_cast<int (*)()>(dlsym(nccl, "ncclGroupEnd"));
  auto destroy = reinterpret_cast<int (*)(Comm)>(dlsym(nccl, "ncclCommDestroy"));
  auto error_string = reinterpret_cast<const char* (*)(int)>(dlsym(nccl, "ncclGetErrorString"));
  if (!init_all || !all_reduce || !group_start || !group_end || !destroy) {
    return fail("libnccl.so.2 lacks the collective API", "reinstall the torch wheel (scripts/bootstrap.sh)");
  }
  constexpr int kFloat32 = 7, kSum = 0;  // ncclFloat32, ncclSum
  constexpr std::int64_t kElements = 16LL << 20;
  std::vector<int> devices(count);
  std::vector<Comm> comms(count, nullptr);
  for (int i = 0; i < count; ++i) devices[i] = i;
  if (const int status = init_all(comms.data(), count, devices.data()); status != 0) {
    return fail(std::string("ncclCommInitAll failed: ") + (error_string ? error_string(status) : std::to_string(status)),
                "run with NCCL_DEBUG=INFO; check `nvidia-smi topo -m` and that no GPU is in exclusive-process mode");
  }
  std::vector<at::Tensor> buffers;
  for (int i = 0; i < count; ++i) buffers.push_back(at::full({kElements}, double(i + 1), on_gpu(i)));
  group_start();
  for (int i = 0; i < count; ++i) {
    auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(i));
    all_reduce(buffers[i].data_ptr(), buffers[i].data_ptr(), kElements, kFloat32, kSum, comms[i], stream.stream());
  }
  const int status = group_end();
  bool correct = status == 0;
  const double expected = count * (count + 1) / 2.0;
  for (int i = 0; i < count && correct; ++i) {
    c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(i)).synchronize();
    correct = (buffers[i] - expected).abs().max().item<double>() == 0.0;
  }
  for (auto comm : comms) destroy(comm);
  if (!correct) {
    return fail("NCCL all-reduce over " + std::to_string(count) + " GPUs returned wrong sums",
                "run `NCCL_DEBUG=INFO gputrain verify`; check NVLink/PCIe peer access with `nvidia-smi topo -m`");
  }
  return pass("NCCL all-reduce of 64 MiB over " + std::to_string(count) + " GPUs is exact");
}

}  // namespace

std::vector<Check> functional_checks(const Context& context) {
  std::vector<Check> checks;
  for (const auto& gpu : context.inventory.gpus) {
    const int i = gpu.index;
    const std::string prefix = "functional." + std::to_string(i) + ".";
    const std::string label = " (GPU " + std::to_string(i) + ")";
    checks.push_back({prefix + "allocator", "functional", "allocate, free, allocator statistics" + label, std::chrono::seconds(20),
                      [i](const Context&) { return check_allocator(i); }});
    checks.push_back({prefix + "round_trip", "functional", "bit-exact host-device round trip" + label, std::chrono::seconds(10),
                      [i](const Context&) { return check_round_trip(i); }});
    checks.push_back({prefix + "cudnn_conv", "functional", "cuDNN convolution vs CPU" + label, std::chrono::seconds(15),
                      [i](const Context&) { return check_cudnn_conv(i); }});
    checks.push_back({prefix + "cache_gather", "functional", "the VRAM cache's gather kernel vs CPU" + label, std::chrono::seconds(10),
                      [i](const Context&) { return check_cache_gather(i); }});
    checks.push_back({prefix + "amp_fp16", "functional", "fp16 mixed-precision step with loss scaling" + label, std::chrono::seconds(15),
                      [i](const Context&) { return check_mixed_precision(i, at::kHalf); }});
    const bool bf16 = gpu.cc_major >= 8;
    checks.push_back(
        {prefix + "amp_bf16", "functional", "bf16 mixed-precision step" + label, std::chrono::seconds(15), [i, bf16](const Context&) {
           return bf16 ? check_mixed_precision(i, at::kBFloat16) : skip("bf16 needs compute capability 8.0 or newer");
         }});
    checks.push_back({prefix + "batch_norm", "functional", "gputrain's batch-norm kernels vs ATen" + label, std::chrono::seconds(15),
                      [i, bf16](const Context&) { return check_batch_norm_kernels(i, bf16 ? at::kBFloat16 : at::kHalf); }});
  }
  if (context.inventory.gpus.size() >= 2) {
    checks.push_back(
        {"functional.nccl_all_reduce", "functional", "NCCL all-reduce across local GPUs", std::chrono::seconds(60), check_nccl_all_reduce});
  }
  return checks;
}

}  // namespace gputrain::checks

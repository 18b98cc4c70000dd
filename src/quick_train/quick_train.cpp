#include "gputrain/quick_train/quick_train.hpp"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "gputrain/core/error.hpp"
#include "gputrain/core/error_text.hpp"
#include "gputrain/core/units.hpp"
#include "gputrain/data/tensor_dataset.hpp"
#include "gputrain/device/select.hpp"
#include "gputrain/memory/device_memory.hpp"
#include "gputrain/train/amp.hpp"
#include "gputrain/train/model.hpp"
#include "gputrain/train/model_registry.hpp"
#include "train/setup/device_settings.hpp"

namespace gputrain::quick_train {

using namespace train;
namespace {

using checks::Check;
using checks::Context;
using checks::Figure;
using checks::Result;

// What the steps hand each other.
struct Run {
  QuickTrainOptions options;
  c10::Device device{at::kCPU};
  bool ready = false;  // the previous step succeeded
  std::unique_ptr<Model> model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<GradScaler> scaler;
  data::TensorDataset batch;
  at::Tensor output;
};

// Every step reports the GPU memory allocated after it, in its detail and as a figure.
Result with_memory(Result result, const Run& run) {
  if (run.device.is_cuda()) {
    const auto bytes = memory::memory_figures(run.device).allocated;
    result.detail += "; GPU memory " + core::format_bytes(bytes);
    result.figures.push_back(Figure{"gpu_memory_allocated", static_cast<double>(bytes) / double(core::kMiB), "MiB", std::nullopt});
  }
  return result;
}

Result needs_previous() { return checks::skip("skipped: an earlier step failed"); }

// An allocation that failed, in the batch's words rather than the allocator's.
Result out_of_memory(const Run& run, const std::string& what) {
  return checks::fail("out of memory at --batch-size " + std::to_string(run.options.batch_size) + " on " + run.device.str() + ": " + what,
                      "give a smaller --batch-size (the default, 32, needs a few MiB)");
}

// The batch's inputs are made on the host, then copied to the device: a batch whose inputs alone
// exceed what either may hold is refused before LibTorch's allocator fails in its own words.
std::optional<Result> refuse_batch_beyond_memory(const Run& run, std::uint64_t sample_bytes) {
  const auto batch = static_cast<std::uint64_t>(run.options.batch_size);
  for (const auto& device : {c10::Device(at::kCPU), run.device}) {
    const auto figures = memory::memory_figures(device);
    if (figures.limit == 0 || batch <= figures.limit / sample_bytes) continue;
    return checks::fail("--batch-size " + std::to_string(batch) + " needs " +
                            (batch > UINT64_MAX / sample_bytes ? "more than 16 EiB" : core::format_bytes(batch * sample_bytes)) +
                            " for its inputs alone, and " + device.str() + " has " + core::format_bytes(figures.limit) + " (" +
                            figures.limit_source + ")",
                        "give --batch-size " + std::to_string(std::max<std::uint64_t>(1, figures.limit / sample_bytes / 4)) +
                            " or less (the default, 32, needs a few MiB)");
  }
  return std::nullopt;
}

Check step(const std::string& id, const std::string& title, const std::shared_ptr<Run>& run,
           const std::function<Result(Run&, const Context&)>& body, std::chrono::seconds limit = std::chrono::seconds(60)) {
  Check check{"quick_train." + id, "quick-train", title, limit, [run, body](const Context& context) {
                if (!run->ready) return needs_previous();
                run->ready = false;
                Result result;
                try {
                  result = body(*run, context);
                } catch (const c10::OutOfMemoryError& e) {
                  result = out_of_memory(*run, core::first_line(e.what_without_backtrace()));
                } catch (const c10::Error& e) {  // the CPU allocator's is an enforce failure
                  const std::string what = e.what_without_backtrace();
                  if (what.find("can't allocate memory") == std::string::npos) throw;
                  result = out_of_memory(*run, core::first_line(what));
                }
                run->ready = result.status == checks::Status::pass || result.status == checks::Status::warn;
                return with_memory(std::move(result), *run);
              }};
  // A step that runs long is most often a large batch on the CPU, not a hung GPU.
  check.timeout_remedy = "--batch-size " + std::to_string(run->options.batch_size) +
                         " may be more than this device computes in time (the CPU takes minutes for 100,000 samples): give a "
                         "smaller one; if the default (32) runs out of time on a GPU, the driver may be hung: check `dmesg | grep -i "
                         "-E 'nvrm|xid'`";
  return check;
}

Result detect_device(Run& run, const Context& context) {
  const auto choice = device::select_device(run.options.device, context.inventory);
  if (choice.kind == device::DeviceChoice::Kind::cpu) {
    run.device = c10::Device(at::kCPU);
    if (run.options.device == "cpu") return checks::pass("cpu (asked for with --device cpu)");
    const std::string why = "no GPU: running on the CPU";
    if (context.allow_cpu) return checks::warn(why, "run `gputrain verify` to see why no GPU is usable");
    return checks::fail(why, "run `gputrain verify` to see why no GPU is usable, or pass --allow-cpu");
  }
  if (!torch::cuda::is_available())
    return checks::fail("the driver lists a GPU but LibTorch cannot use CUDA", "run `gputrain verify` for the cause");
  run.device = c10::Device(at::kCUDA, static_cast<c10::DeviceIndex>(choice.index));
  const auto& gpu = context.inventory.gpus.at(static_cast<std::size_t>(choice.index));
  return checks::pass(run.device.str() + " " + gpu.name + " (" + core::format_bytes(gpu.memory_total) + ")");
}

Result cuda_settings(Run& run, const Context&) {
  apply_backend_settings(TrainConfig{});  // the defaults: TF32 and cuDNN benchmark on
  auto& ctx = at::globalContext();
  if (!run.device.is_cuda())
    return checks::pass("CPU run: autocast " + to_string(run.options.precision) + ", " + std::to_string(at::get_num_threads()) +
                        " intra-op threads");
  return checks::pass("TF32 on, cuDNN benchmark on, cuDNN " + std::to_string(ctx.versionCuDNN()) + ", autocast " +
                      to_string(run.options.precision));
}

Result create_model(Run& run, const Context&) {
  ModelSpec spec;
  spec.config.name = "small_cnn";
  spec.config.width = 16;
  spec.input_shape = {3, 32, 32};
  spec.outputs = 10;
  run.model = build_model(spec);
  run.model->to(run.device);
  run.model->set_training(true);
  run.optimizer = std::make_unique<torch::optim::AdamW>(run.model->parameters(), torch::optim::AdamWOptions(3e-3));
  run.scaler = std::make_unique<GradScaler>(run.options.precision == Precision::fp16_mixed, run.device);
  data::SyntheticSpec data{"classification", {3, 32, 32}, 10, 7};
  if (auto refused = refuse_batch_beyond_memory(run, 3 * 32 * 32 * sizeof(float))) return *refused;
  const auto set = data::make_synthetic(data, run.options.batch_size, 0);
  run.batch = {set.inputs.to(run.device), set.targets.to(run.device)};
  return checks::pass("small_cnn, " + std::to_string(parameter_count(*run.model)) + " parameters on " + run.device.str());
}

Result forward(Run& run, const Context&) {
  {
    AutocastScope autocast(run.device.type(), run.options.precision);
    run.output = run.model->forward(run.batch.inputs);
  }
  if (!at::isfinite(run.output).all().item<bool>()) return checks::fail("the output holds inf or NaN", "run `gputrain verify`");
  return checks::pass("output " + c10::str(run.output.sizes()) + " in " + std::string(c10::toString(run.output.scalar_type())));
}

Result backward(Run& run, const Context&) {
  const auto params = run.model->parameters();
  const auto loss = at::cross_entropy_loss(run.output.to(at::kFloat), run.batch.targets);
  run.scaler->scale(loss).backward();
  run.scaler->unscale(params);
  for (const auto& p : params)
    if (p.grad().defined() && !at::isfinite(p.grad()).all().item<bool>())
      return checks::fail("a gradient holds inf or NaN after unscaling", "run `gputrain verify`");
  run.scaler->step(params, *run.optimizer);  // taken: the gradients were found finite above
  run.scaler->update();
  run.optimizer->zero_grad(true);
  std::string detail = "loss " + core::format_fixed(loss.item<double>(), 4);
  detail += run.scaler->enabled() ? ", GradScaler scale " + core::format_fixed(run.scaler->scale_value(), 0) + ", step taken"
                                  : ", no loss scaling needed for " + to_string(run.options.precision);
  return checks::pass(detail);
}

Result short_loop(Run& run, const Context&) {
  const auto params = run.model->parameters();
  double first = 0, last = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < run.options.iterations; ++i) {
    at::Tensor loss;
    {
      AutocastScope autocast(run.device.type(), run.options.precision);
      loss = at::cross_entropy_loss(run.model->forward(run.batch.inputs).to(at::kFloat), run.batch.targets);
    }
    run.scaler->scale(loss).backward();
    run.scaler->step(params, *run.optimizer);
    run.scaler->update();
    run.optimizer->zero_grad(true);
    const double value = loss.item<double>();
    if (i == 0) first = value;
    last = value;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double rate = static_cast<double>(run.options.iterations * run.options.batch_size) / seconds;
  std::vector<Figure> figures{{"first_loss", first, "", std::nullopt},
                              {"last_loss", last, "", std::nullopt},
                              {"samples_per_second", rate, "samples/s", std::nullopt}};
  const std::string detail = std::to_string(run.options.iterations) + " iterations, loss " + core::format_fixed(first, 4) + " -> " +
                             core::format_fixed(last, 4) + ", " + core::format_fixed(rate, 0) + " samples/s";
  if (!(last < first))
    return checks::fail(detail + ": the loss did not fall", "run `gputrain verify`; a numerics problem (driver, cuDNN) is likely", figures);
  return checks::pass(detail, figures);
}

}  // namespace

std::vector<checks::Check> quick_train_steps(const QuickTrainOptions& options) {
  auto run = std::make_shared<Run>();
  run->options = options;
  run->ready = true;
  return {step("device", "device detection", run, detect_device, std::chrono::seconds(30)),
          step("cuda_settings", "CUDA settings", run, cuda_settings),
          step("model", "model creation and transfer", run, create_model),
          step("forward", "forward pass with autocast", run, forward),
          step("backward", "backward pass with the GradScaler", run, backward),
          step("loop", std::to_string(options.iterations) + "-iteration training loop (loss must fall)", run, short_loop,
               std::chrono::seconds(120))};
}

}  // namespace gputrain::quick_train

#include "gputrain/profile/loader_sweep.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "gputrain/data/epoch_sampler.hpp"
#include "gputrain/data/loader.hpp"

namespace gputrain::profile {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void wait_for_device(c10::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Batches per second of `feed` over one repeat: warm-up first, then `batches` batches and at least
// `min_seconds`, at most `max_seconds`, restarting the pass (a new epoch order) when the data runs
// out.
double time_feed(data::Feed& feed, c10::Device device, std::int64_t size, const SweepOptions& o, std::int64_t& epoch) {
  const auto restart = [&] { feed.start(data::EpochSampler(size, true, o.seed).order(epoch++), o.batch_size); };
  restart();
  const auto next = [&] {
    auto fed = feed.next();
    if (!fed) {
      restart();
      fed = feed.next();
    }
    return fed;
  };
  for (int i = 0; i < o.warmup_batches; ++i) (void)next();
  wait_for_device(device);
  const auto start = Clock::now();
  int done = 0;
  while (true) {
    (void)next();
    ++done;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed > o.max_seconds || (done >= o.batches && elapsed >= o.min_seconds)) break;
  }
  wait_for_device(device);
  return done / std::chrono::duration<double>(Clock::now() - start).count();
}

// GB/s of `work`, which moves `bytes` a call: one call to warm up (kernel load, allocator), then
// the median of 5 timings of `calls` calls each, the device synchronised around every timing.
double median_gbps(c10::Device device, double bytes, int calls, const std::function<void()>& work) {
  work();
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    wait_for_device(device);
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) work();
    wait_for_device(device);
    rates.push_back(calls * bytes / 1e9 / std::chrono::duration<double>(Clock::now() - start).count());
  }
  return median(rates);
}

// The cache's gather alone, `n` random samples a gather (as its feed gathers them in training:
// several batches at once on a GPU), after a warm-up; median of 5 timings of 10 gathers each, in
// sample bytes per second / 1e9.
double time_gather(const data::DeviceCache& cache, c10::Device device, std::int64_t n, double sample_bytes) {
  const auto size = cache.data().size();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  const auto indices = at::randperm(size, gen, at::TensorOptions().dtype(at::kLong)).slice(0, 0, n).to(cache.data().inputs.device());
  return median_gbps(device, static_cast<double>(n) * sample_bytes, 10, [&] { (void)cache.gather(indices); });
}

}  // namespace

std::size_t best_result(const std::vector<SweepResult>& results) {
  double fastest = 0;
  for (const auto& r : results) fastest = std::max(fastest, r.samples_per_second);
  // As fast, for fewer threads and less memory: a few percent between settings is the timing's noise.
  std::size_t best = 0;
  while (best + 1 < results.size() && results[best].samples_per_second < (1 - kSameSpeed) * fastest) ++best;
  return best;
}

std::vector<int> worker_counts(int usable_cores) {
  std::vector<int> out{0};
  for (int w = 1; w < usable_cores; w *= 2) out.push_back(w);
  if (usable_cores > 0) out.push_back(usable_cores);
  return out;
}

double measure_pinned_copy_gbps(c10::Device device) {
  if (!device.is_cuda()) return 0;
  const std::int64_t bytes = 256LL << 20;
  const auto host = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  auto target = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  return median_gbps(device, static_cast<double>(bytes), 1, [&] { target.copy_(host, true); });
}

double measure_device_copy_gbps(c10::Device device) {
  if (!device.is_cuda()) return 0;
  const std::int64_t bytes = 256LL << 20;
  const auto source = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  auto target = at::empty_like(source);
  return median_gbps(device, static_cast<double>(bytes), 1, [&] { target.copy_(source); });
}

LoaderSweep sweep_loader(const std::shared_ptr<const data::Dataset>& dataset, c10::Device device, const SweepOptions& o,
                         const std::function<void(const SweepResult&, std::size_t, std::size_t)>& on_result) {
  LoaderSweep sweep;
  sweep.device = device.str();
  // A set smaller than the batch is one batch of every sample: the figures are for that batch.
  sweep.batch_size = std::min(o.batch_size, dataset->size());
  sweep.asked_batch_size = o.batch_size;
  sweep.samples = dataset->size();
  sweep.sample_bytes = dataset->layout().input_bytes() + dataset->layout().target_bytes();
  sweep.dataset = dataset->description();
  sweep.pinned_copy_gbps = measure_pinned_copy_gbps(device);
  sweep.device_copy_gbps = measure_device_copy_gbps(device);

  std::vector<SweepSetting> settings;
  for (const int workers : o.workers)
    for (const bool pin : device.is_cuda() ? std::vector<bool>{false, true} : std::vector<bool>{false})
      for (const int prefetch : workers == 0 ? std::vector<int>{1} : o.prefetch)
        settings.push_back({workers, pin, prefetch, data::CacheMode::none});
  for (const auto cache : o.caches) settings.push_back({0, cache == data::CacheMode::ram, 1, cache});

  std::unique_ptr<data::DeviceCache> vram, ram;
  std::int64_t cached_size = dataset->size();
  for (const auto& setting : settings) {
    SweepResult result;
    result.setting = setting;
    std::unique_ptr<data::Feed> feed;
    std::int64_t size = dataset->size();
    if (setting.cache == data::CacheMode::none) {
      feed = std::make_unique<data::Loader>(dataset, o.batch_size,
                                            data::LoaderOptions{setting.workers, setting.prefetch, setting.pin_memory, 120, device});
    } else {
      auto& cache = setting.cache == data::CacheMode::vram ? vram : ram;
      if (!cache) {
        auto loaded = data::materialize(*dataset, std::max(1, o.workers.empty() ? 1 : o.workers.back()));
        cached_size = loaded.set.size();
        cache = std::make_unique<data::DeviceCache>(std::move(loaded.set), setting.cache, device);
      }
      size = cached_size;
      feed = cache->feed();
    }
    std::int64_t epoch = 0;
    for (int r = 0; r < o.repeats; ++r) result.batches_per_second.push_back(time_feed(*feed, device, size, o, epoch));
    result.median_batches_per_second = median(result.batches_per_second);
    result.samples_per_second = result.median_batches_per_second * static_cast<double>(std::min(o.batch_size, size));
    result.megabytes_per_second = result.samples_per_second * static_cast<double>(sweep.sample_bytes) / 1e6;
    if (setting.cache != data::CacheMode::none) {
      const auto& cache = setting.cache == data::CacheMode::vram ? vram : ram;
      result.gather_rows = std::min(o.batch_size * cache->batches_per_gather(o.batch_size), cache->data().size());
      result.gather_gbps = time_gather(*cache, device, result.gather_rows, static_cast<double>(sweep.sample_bytes));
    }
    sweep.results.push_back(result);
    if (on_result) on_result(sweep.results.back(), sweep.results.size(), settings.size());
  }
  const double baseline = sweep.results.front().samples_per_second;
  for (auto& r : sweep.results) r.speedup = baseline > 0 ? r.samples_per_second / baseline : 0;
  sweep.best = best_result(sweep.results);
  return sweep;
}

}  // namespace gputrain::profile

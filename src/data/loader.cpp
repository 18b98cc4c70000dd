#include "gputrain/data/loader.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "gputrain/core/error.hpp"
#include "gputrain/core/units.hpp"

namespace gputrain::data {
namespace {

enum class SlotState { free, filling, ready };

// One staging buffer of the ring, filled by one worker at a time.
struct Slot {
  at::Tensor inputs, targets;  // max_batch rows, host memory
  SlotState state = SlotState::free;
  std::int64_t batch = -1, rows = 0, covered = 0;
  std::exception_ptr error;
  std::vector<std::string> skipped;
  std::unique_ptr<c10::cuda::CUDAEvent> copied;  // recorded after the copy that read this buffer
};

}  // namespace

struct Loader::Impl {
  std::shared_ptr<const Dataset> dataset;
  LoaderOptions options;
  std::int64_t max_batch = 0, input_bytes = 0, target_bytes = 0;
  std::vector<Slot> slots;
  std::vector<std::thread> threads;

  mutable std::mutex mutex;
  std::condition_variable work_ready, batch_ready;  // for the workers / for the consumer
  bool stopping = false;
  std::uint64_t generation = 0;  // bumped by start(): older fills are discarded
  at::Tensor order;
  std::int64_t batch_size = 1, batches = 0, claimed = 0, consumed = 0;
  std::vector<std::string> skipped_all;  // each unreadable sample once, however many epochs met it
  std::unordered_set<std::string> skipped_seen;
  std::optional<c10::cuda::CUDAStream> side_stream;

  Slot& slot_of(std::int64_t batch) { return slots[static_cast<std::size_t>(batch) % slots.size()]; }

  // Reads batch `batch` of `order` into `slot`; unreadable samples are left out and listed.
  void fill(Slot& slot, const at::Tensor& order_now, std::int64_t batch, std::int64_t size) {
    if (slot.copied) slot.copied->synchronize();  // the GPU may still be reading this buffer
    const std::int64_t n = order_now.size(0), first = batch * size, count = std::min(size, n - first);
    const auto* indices = order_now.const_data_ptr<std::int64_t>() + first;
    auto* in = static_cast<char*>(slot.inputs.data_ptr());
    auto* tgt = static_cast<char*>(slot.targets.data_ptr());
    slot.rows = 0;
    slot.covered = count;
    slot.skipped.clear();
    slot.error = nullptr;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t index = indices[i];
      try {
        dataset->read(index, in + slot.rows * input_bytes, tgt + slot.rows * target_bytes);
        ++slot.rows;
      } catch (const SkippedSample& e) {
        slot.skipped.push_back(dataset->origin(index) + ": " + e.what());
      } catch (const Error& e) {
        slot.error = std::make_exception_ptr(Error(
            "data loader: sample " + std::to_string(index) + " (" + dataset->origin(index) + "): " + e.what(), e.remedy(), e.exit_code()));
        return;
      } catch (const std::exception& e) {
        slot.error =
            std::make_exception_ptr(Error("data loader: sample " + std::to_string(index) + " (" + dataset->origin(index) + "): " + e.what(),
                                          "check that file; the loader stops at the first sample it cannot read"));
        return;
      }
    }
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      work_ready.wait(lock, [&] { return stopping || (claimed < batches && slot_of(claimed).state == SlotState::free); });
      if (stopping) return;
      const std::int64_t batch = claimed++;
      Slot& slot = slot_of(batch);
      slot.state = SlotState::filling;
      slot.batch = batch;
      const auto my_generation = generation;
      const auto my_order = order;  // start() may replace it while this batch is read
      const auto size = batch_size;
      lock.unlock();
      fill(slot, my_order, batch, size);
      lock.lock();
      slot.state = my_generation == generation ? SlotState::ready : SlotState::free;
      batch_ready.notify_all();
      work_ready.notify_all();
    }
  }

  // The slot's rows as a batch on the training device; the slot is free again afterwards.
  Batch deliver(Slot& slot) {
    const auto inputs = slot.inputs.narrow(0, 0, slot.rows), targets = slot.targets.narrow(0, 0, slot.rows);
    if (!options.device.is_cuda()) return {inputs.clone(), targets.clone()};
    const auto compute = c10::cuda::getCurrentCUDAStream(options.device.index());
    Batch out;
    {
      // Allocated and filled on the side stream; the compute stream waits for the copy only.
      c10::cuda::CUDAStreamGuard guard(*side_stream);
      out.inputs = at::empty(inputs.sizes(), inputs.options().device(options.device).pinned_memory(false));
      out.targets = at::empty(targets.sizes(), targets.options().device(options.device).pinned_memory(false));
      out.inputs.copy_(inputs, /*non_blocking=*/options.pin_memory);
      out.targets.copy_(targets, /*non_blocking=*/options.pin_memory);
      if (!slot.copied) slot.copied = std::make_unique<c10::cuda::CUDAEvent>();
      slot.copied->record(*side_stream);
      slot.copied->block(compute);
    }
    // Their memory is used on the compute stream from now on: the allocator must not hand it
    // out again on the side stream before the compute stream is done with it.
    c10::cuda::CUDACachingAllocator::recordStream(out.inputs.storage().data_ptr(), compute);
    c10::cuda::CUDACachingAllocator::recordStream(out.targets.storage().data_ptr(), compute);
    return out;
  }
};

Loader::Loader(std::shared_ptr<const Dataset> dataset, std::int64_t max_batch, LoaderOptions options) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.dataset = std::move(dataset);
  m.options = options;
  m.max_batch = std::max<std::int64_t>(1, max_batch);
  const auto& layout = m.dataset->layout();
  m.input_bytes = layout.input_bytes();
  m.target_bytes = layout.target_bytes();
  const bool pinned = options.device.is_cuda() && options.pin_memory;
  if (options.device.is_cuda()) m.side_stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, options.device.index());
  const int workers = std::max(0, options.workers);
  const auto slots = staging_for(layout, m.max_batch, options).first;
  std::vector<std::int64_t> in_shape{m.max_batch}, tgt_shape{m.max_batch};
  in_shape.insert(in_shape.end(), layout.input_shape.begin(), layout.input_shape.end());
  tgt_shape.insert(tgt_shape.end(), layout.target_shape.begin(), layout.target_shape.end());
  m.slots.resize(slots);
  for (auto& slot : m.slots) {
    slot.inputs = at::empty(in_shape, at::TensorOptions().dtype(layout.input_dtype).pinned_memory(pinned));
    slot.targets = at::empty(tgt_shape, at::TensorOptions().dtype(layout.target_dtype).pinned_memory(pinned));
  }
  for (int w = 0; w < workers; ++w) m.threads.emplace_back([&m] { m.work(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->work_ready.notify_all();
  for (auto& t : impl_->threads) t.join();
}

void Loader::start(const at::Tensor& order, std::int64_t batch_size) {
  auto& m = *impl_;
  if (batch_size > m.max_batch)
    throw Error("loader: batch of " + std::to_string(batch_size) + " samples asked, its buffers hold " + std::to_string(m.max_batch),
                "this is a bug in gputrain: please report it");
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    ++m.generation;
    m.order = order.to(at::kCPU, at::kLong).contiguous();
    m.batch_size = std::max<std::int64_t>(1, batch_size);
    m.batches = (m.order.size(0) + m.batch_size - 1) / m.batch_size;
    m.claimed = m.consumed = 0;
    for (auto& slot : m.slots)
      if (slot.state == SlotState::ready) slot.state = SlotState::free;  // a filling one frees itself
  }
  m.work_ready.notify_all();
}

std::optional<FedBatch> Loader::next() {
  auto& m = *impl_;
  std::int64_t covered = 0;
  while (true) {
    std::unique_lock<std::mutex> lock(m.mutex);
    if (m.consumed >= m.batches) return std::nullopt;
    const std::int64_t batch = m.consumed;
    Slot& slot = m.slot_of(batch);
    if (m.threads.empty()) {
      slot.batch = batch;
      const auto order = m.order;
      lock.unlock();
      m.fill(slot, order, batch, m.batch_size);
      lock.lock();
    } else {
      const auto ready = [&] { return slot.state == SlotState::ready && slot.batch == batch; };
      if (!m.batch_ready.wait_for(lock, std::chrono::duration<double>(m.options.timeout_seconds), ready)) {
        const std::int64_t first = m.order.const_data_ptr<std::int64_t>()[batch * m.batch_size];
        throw Error("data loader: batch " + std::to_string(batch + 1) + " of " + std::to_string(m.batches) + " not ready after " +
                        core::format_fixed(m.options.timeout_seconds, 0) + " s (its first sample: " + m.dataset->origin(first) +
                        "): a worker is stuck reading it",
                    "check the storage the data is on (a slow or hung network file system?); raise data.timeout if reads are "
                    "just slow");
      }
    }
    ++m.consumed;
    for (auto& line : slot.skipped)
      if (m.skipped_seen.insert(line).second) m.skipped_all.push_back(line);
    if (slot.error) {
      slot.state = SlotState::free;
      m.work_ready.notify_all();
      std::rethrow_exception(slot.error);
    }
    covered += slot.covered;
    slot.state = SlotState::filling;  // reserved while it is copied out, without holding the lock
    lock.unlock();
    std::optional<FedBatch> out;
    if (slot.rows > 0) out = FedBatch{m.deliver(slot), covered};  // a batch of only unreadable samples is passed over
    lock.lock();
    slot.state = SlotState::free;
    lock.unlock();
    m.work_ready.notify_all();
    if (out) return out;
  }
}

std::vector<std::string> Loader::skipped() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->skipped_all;
}

std::pair<std::size_t, std::uint64_t> Loader::staging_for(const SampleLayout& layout, std::int64_t max_batch,
                                                          const LoaderOptions& options) {
  const std::size_t slots =
      options.workers <= 0 ? 1 : static_cast<std::size_t>(options.workers) * static_cast<std::size_t>(std::max(1, options.prefetch));
  const auto per_sample = static_cast<std::uint64_t>(layout.input_bytes() + layout.target_bytes());
  return {slots, per_sample * static_cast<std::uint64_t>(std::max<std::int64_t>(1, max_batch))};
}

std::uint64_t Loader::staging_bytes() const {
  std::uint64_t total = 0;
  for (const auto& slot : impl_->slots) total += slot.inputs.nbytes() + slot.targets.nbytes();
  return total;
}

}  // namespace gputrain::data

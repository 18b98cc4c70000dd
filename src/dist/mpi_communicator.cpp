// The CPU engine: Open MPI. One background thread makes every MPI call of the process, in the
// order the collectives were issued (the order every rank issues them in), so an all-reduce runs
// while backward goes on computing the next bucket, and MPI needs only MPI_THREAD_SERIALIZED.

#include <mpi.h>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "engines.hpp"
#include "gputrain/core/stop_signal.hpp"

namespace gputrain::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) throw CommunicationError("MPI failed in " + what + ": " + mpi_error_text(code), "see the other ranks' logs");
}

// MPI has no 16-bit float types: they travel as 16-bit words and are summed by these.
template <typename Half>
void sum_halves(void* in, void* inout, int* count, MPI_Datatype*) {
  const auto* a = static_cast<const Half*>(in);
  auto* b = static_cast<Half*>(inout);
  for (int i = 0; i < *count; ++i) b[i] = static_cast<Half>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

// Trivially destructible, so still there for a thread that returns from MPI while the process exits.
std::atomic<int>& collectives_left_running() {
  static std::atomic<int> count{0};
  return count;
}

// MPI_Init_thread once per process, MPI_Finalize at exit after the last communicator is gone.
class MpiRuntime {
 public:
  static MpiRuntime& get() {
    static MpiRuntime runtime;
    return runtime;
  }
  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (started_) return;
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw CommunicationError("this MPI library offers no MPI_THREAD_SERIALIZED support", "use Open MPI from Debian's packages");
    MPI_Op_create(&sum_halves<c10::BFloat16>, /*commute=*/1, &bf16_sum_);
    MPI_Op_create(&sum_halves<c10::Half>, /*commute=*/1, &fp16_sum_);
    started_ = true;
  }
  bool started() const { return started_ && !finalized_; }
  /// A collective was left running (its peers may never join it): while one is, MPI_Finalize
  /// would wait for it forever, so the process ends without it (mpirun then stops the others).
  /// A plain atomic outside the runtime: the thread left in the call may return during exit.
  static void left_running(int change) { collectives_left_running() += change; }
  MPI_Op sum_for(at::ScalarType type) const {
    if (type == at::kBFloat16) return bf16_sum_;
    if (type == at::kHalf) return fp16_sum_;
    return MPI_SUM;
  }
  ~MpiRuntime() {
    if (started_ && !finalized_ && collectives_left_running() == 0) {
      finalized_ = true;
      MPI_Op_free(&bf16_sum_);
      MPI_Op_free(&fp16_sum_);
      MPI_Finalize();
    }
  }

 private:
  std::mutex mutex_;
  bool started_ = false, finalized_ = false;
  MPI_Op bf16_sum_ = MPI_OP_NULL, fp16_sum_ = MPI_OP_NULL;
};

MPI_Datatype mpi_type(at::ScalarType type, const std::string& what) {
  switch (type) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kLong:
      return MPI_INT64_T;
    case at::kInt:
      return MPI_INT32_T;
    case at::kByte:
      return MPI_UINT8_T;
    case at::kBool:
      return MPI_C_BOOL;
    case at::kBFloat16:
    case at::kHalf:
      return MPI_UINT16_T;
    default:
      throw CommunicationError(what + ": MPI cannot reduce " + std::string(c10::toString(type)) + " tensors", "");
  }
}

// MPI counts are ints: larger tensors go in pieces.
template <typename Call>
void in_pieces(const at::Tensor& t, Call call) {
  const std::int64_t n = t.numel(), piece = INT_MAX / 2;
  auto* base = static_cast<char*>(t.data_ptr());
  for (std::int64_t start = 0; start < n; start += piece)
    call(base + start * static_cast<std::int64_t>(t.element_size()), static_cast<int>(std::min(piece, n - start)));
}

class MpiWork final : public Work {
 public:
  MpiWork(std::shared_future<void> done, std::shared_ptr<double> seconds, std::string what, int rank, std::chrono::seconds timeout)
      : done_(std::move(done)), seconds_(std::move(seconds)), what_(std::move(what)), rank_(rank), timeout_(timeout) {}
  std::optional<double> seconds() const override { return *seconds_; }  // written before done_ was set
  void wait() override {
    if (done_.wait_for(timeout_) != std::future_status::ready)
      throw CommunicationError("rank " + std::to_string(rank_) + ": " + what_ + " did not finish within " +
                                   std::to_string(timeout_.count()) + " s: another rank stopped or hangs",
                               "see the other ranks' output for the first error; raise distributed.timeout if a rank is only slow "
                               "(e.g. a long validation or checkpoint on rank 0)");
    done_.get();  // rethrows what the MPI call threw
  }

 private:
  std::shared_future<void> done_;
  std::shared_ptr<double> seconds_;
  std::string what_;
  int rank_;
  std::chrono::seconds timeout_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const RankEnvironment& env, const CommunicatorOptions& options) : timeout_(options.timeout) {
    MpiRuntime::get().start();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (rank_ != env.rank || size_ != env.world_size)
      throw UsageError(
          "MPI says this is rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ", the environment says " + describe(env),
          "start CPU ranks with mpirun (or gputrain train --nproc-per-node N, which uses it), and do not set RANK "
          "or WORLD_SIZE by hand");
    // Errors come back as codes (and become exceptions) instead of aborting the job silently.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    thread_ = std::thread([channel = channel_] { serve(*channel); });
  }
  // Normally every collective issued has been waited for and the thread ends at once. After a
  // failure it may be inside one that its peers will never join (this rank gave up on it after
  // distributed.timeout, or threw between issuing and waiting): MPI cannot cancel it, so the
  // thread is left to it, and the error reaches the caller (whose end_failed_run stops the job)
  // instead of this destructor waiting forever.
  ~MpiCommunicator() override {
    {
      std::unique_lock<std::mutex> lock(channel_->mutex);
      channel_->stopping = true;
      channel_->queue.clear();  // issued but not started: nobody will wait for them now
      channel_->ready.notify_all();
      constexpr auto kGrace = std::chrono::seconds(1);
      if (!channel_->ended.wait_for(lock, kGrace, [&] { return channel_->finished; })) {
        channel_->left = true;
        MpiRuntime::left_running(+1);
        lock.unlock();
        thread_.detach();  // it owns the channel too, so it may still finish the call safely
        return;
      }
    }
    thread_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::mpi; }

  std::shared_ptr<Work> all_reduce_sum(at::Tensor tensor, const std::string& what) override {
    TORCH_CHECK(tensor.is_cpu() && tensor.is_contiguous(), what, ": MPI reduces contiguous CPU tensors");
    const auto type = mpi_type(tensor.scalar_type(), what);
    const MPI_Op op = MpiRuntime::get().sum_for(tensor.scalar_type());
    return submit(what, [tensor, type, op, what] {
      in_pieces(tensor, [&](void* data, int count) { check(MPI_Allreduce(MPI_IN_PLACE, data, count, type, op, MPI_COMM_WORLD), what); });
    });
  }

  void broadcast(const std::vector<at::Tensor>& tensors, int root, const std::string& what) override {
    submit(what, [tensors, root, what] {
      for (const auto& t : tensors) {
        const auto staged = t.contiguous();
        const auto type = mpi_type(staged.scalar_type(), what);
        in_pieces(staged, [&](void* data, int count) { check(MPI_Bcast(data, count, type, root, MPI_COMM_WORLD), what); });
        if (!staged.is_same(t)) t.copy_(staged);
      }
    })->wait();
  }

  std::shared_ptr<Work> start_broadcast(at::Tensor tensor, int root, const std::string& what) override {
    TORCH_CHECK(tensor.is_cpu() && tensor.is_contiguous(), what, ": MPI broadcasts contiguous CPU tensors");
    const auto type = mpi_type(tensor.scalar_type(), what);
    return submit(what, [tensor, type, root, what] {
      in_pieces(tensor, [&](void* data, int count) { check(MPI_Bcast(data, count, type, root, MPI_COMM_WORLD), what); });
    });
  }

  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string& what) override {
    // Owned by the task: after a timeout the call may still complete later, into these buffers.
    auto mine = std::make_shared<std::vector<std::int64_t>>(values);
    auto all = std::make_shared<std::vector<std::int64_t>>(values.size() * static_cast<std::size_t>(size_));
    submit(what, [mine, all, what] {
      const int count = static_cast<int>(mine->size());
      check(MPI_Allgather(mine->data(), count, MPI_INT64_T, all->data(), count, MPI_INT64_T, MPI_COMM_WORLD), what);
    })->wait();
    return *all;
  }

 private:
  struct Task {
    std::function<void()> run;
    std::promise<void> done;
    std::shared_ptr<double> seconds;
  };

  std::shared_ptr<Work> submit(const std::string& what, std::function<void()> run) {
    Task task{std::move(run), {}, std::make_shared<double>(0.0)};
    std::shared_future<void> done = task.done.get_future().share();
    auto seconds = task.seconds;
    {
      std::lock_guard<std::mutex> lock(channel_->mutex);
      channel_->queue.push_back(std::move(task));
    }
    channel_->ready.notify_one();
    return std::make_shared<MpiWork>(std::move(done), std::move(seconds), what, rank_, timeout_);
  }

  // What the communicator and its thread share; the thread holds it too, as it may outlive the
  // communicator (see the destructor).
  struct Channel {
    std::mutex mutex;
    std::condition_variable ready, ended;
    std::deque<Task> queue;
    bool stopping = false, finished = false, left = false;
  };

  static void serve(Channel& channel) {
    while (true) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(channel.mutex);
        channel.ready.wait(lock, [&] { return channel.stopping || !channel.queue.empty(); });
        if (channel.stopping) {
          channel.finished = true;
          if (channel.left) MpiRuntime::left_running(-1);  // its peers joined late after all
          channel.ended.notify_all();
          return;
        }
        task = std::move(channel.queue.front());
        channel.queue.pop_front();
      }
      const auto start = Clock::now();
      try {
        task.run();
        *task.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        task.done.set_value();
      } catch (...) {
        task.done.set_exception(std::current_exception());
      }
    }
  }

  int rank_ = 0, size_ = 1;
  std::chrono::seconds timeout_;
  std::shared_ptr<Channel> channel_ = std::make_shared<Channel>();
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Communicator> connect_mpi(const RankEnvironment& env, const CommunicatorOptions& options) {
  return std::make_unique<MpiCommunicator>(env, options);
}

void abort_mpi(int exit_code) {
  if (!MpiRuntime::get().started()) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) return;  // alone, there is nobody to stop
  // This rank has said its error and is done: the SIGTERM mpirun sends every rank as the job comes
  // down must end it quietly, not announce a checkpoint it will never write.
  for (const int signal : core::kStopSignals) std::signal(signal, SIG_DFL);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
}

}  // namespace gputrain::dist

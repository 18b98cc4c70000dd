#include "c10d_rendezvous.hpp"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <c10/util/Logging.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <thread>

#include "gputrain/core/error_text.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {

namespace {

using Clock = std::chrono::steady_clock;

// c10d logs every failed attempt to reach rank 0 ("[W socket.cpp] The client socket has failed to
// connect ..., retrying", with its backtrace): while ranks wait for each other our own lines say
// it once, and the error quotes the last attempt.
class QuietC10d {
 public:
  QuietC10d() : before_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = 3; }  // fatal only
  ~QuietC10d() { FLAGS_caffe2_log_level = before_; }
  QuietC10d(const QuietC10d&) = delete;
  QuietC10d& operator=(const QuietC10d&) = delete;

 private:
  int before_;
};

std::string seconds_text(Clock::duration d) { return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s"; }

std::string joined_key(int rank) { return "gputrain/joined/" + std::to_string(rank); }

// "rank 2", "ranks 1, 2 and 5", "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 56 more".
std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]);
  }
  if (shown < ranks.size()) text += " and " + std::to_string(ranks.size() - shown) + " more";
  return text;
}

std::vector<int> missing_ranks(c10d::Store& store, int world_size) {
  std::vector<int> missing;
  for (int r = 1; r < world_size; ++r)
    if (!store.check({joined_key(r)})) missing.push_back(r);
  return missing;
}

// Ends a wait the user stopped: no step has run, so nothing is lost (exit 130).
void stop_if_requested(const std::string& waiting) {
  if (core::stop_requested())
    throw Error("interrupted while " + waiting + ", before any training step: nothing to resume",
                "run the same command again to start over", ExitCode::interrupted);
}

// Says how a long wait stands: first after `first_report`, then every `report_every`.
class WaitReport {
 public:
  explicit WaitReport(const RendezvousOptions& options) : options_(options), next_(start_ + options.first_report) {}
  void operator()(const std::function<std::string()>& line) {
    if (!options_.progress || Clock::now() < next_) return;
    next_ = Clock::now() + options_.report_every;
    *options_.progress << line() << " (" << seconds_text(Clock::now() - start_) << " of " << options_.timeout.count()
                       << " s, distributed.timeout)\n"
                       << std::flush;
  }
  bool expired() const { return Clock::now() - start_ >= options_.timeout; }
  Clock::duration left() const { return start_ + options_.timeout - Clock::now(); }

 private:
  const RendezvousOptions& options_;
  Clock::time_point start_ = Clock::now(), next_;
};

// Rank 0 hosts the store. It fails at once when the port is taken or MASTER_ADDR is not this host.
c10::intrusive_ptr<c10d::TCPStore> host_store(const std::string& host, c10d::TCPStoreOptions options) {
  options.timeout = std::min<std::chrono::milliseconds>(options.timeout, std::chrono::seconds(30));
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& e) {
    const std::string where = host + ":" + std::to_string(options.port), why = core::without_backtrace(e.what());
    if (why.find("listen") != std::string::npos)
      throw CommunicationError("rank 0 could not listen at port " + std::to_string(options.port) + ": " + why,
                               "is the port free? pick another MASTER_PORT");
    throw CommunicationError("rank 0 could not reach its own rendezvous at " + where + ": " + why,
                             "MASTER_ADDR must name rank 0's node, this one (`hostname -I` lists its addresses)");
  }
}

// Another rank connects, in attempts of a few seconds so that a stop signal is heard between them.
c10::intrusive_ptr<c10d::TCPStore> reach_store(const std::string& host, c10d::TCPStoreOptions options, int rank,
                                               const RendezvousOptions& wait) {
  const std::string where = host + ":" + std::to_string(options.port);
  WaitReport report(wait);
  std::string last;
  while (true) {
    stop_if_requested("waiting for rank 0 at " + where);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(report.left());
    options.timeout = std::clamp<std::chrono::milliseconds>(left, std::chrono::milliseconds(100), std::chrono::seconds(2));
    try {
      return c10::make_intrusive<c10d::TCPStore>(host, options);
    } catch (const std::exception& e) {
      last = core::without_backtrace(e.what());
    }
    if (report.expired())
      throw CommunicationError("rank " + std::to_string(rank) + " could not reach rank 0 at " + where + " within " +
                                   std::to_string(wait.timeout.count()) + " s (distributed.timeout); the last attempt: " + last,
                               "is rank 0 running, and is " + where +
                                   " reachable from this node (firewall)? If rank 0 starts "
                                   "later (another node's queue), raise distributed.timeout");
    report([&] { return "rank " + std::to_string(rank) + ": waiting for rank 0 at " + where; });
  }
}

// Rank 0 waits until every rank has said it joined, naming those that have not.
void wait_for_ranks(c10d::Store& store, const std::string& where, int world_size, const RendezvousOptions& options) {
  WaitReport report(options);
  const auto joined = [world_size](const std::vector<int>& missing) {
    return std::to_string(world_size - static_cast<int>(missing.size())) + " of " + std::to_string(world_size) + " joined";
  };
  while (store.add("gputrain/joined", 0) < world_size) {
    stop_if_requested("waiting for the other ranks at " + where);
    if (report.expired()) {
      const auto missing = missing_ranks(store, world_size);
      throw CommunicationError("rank 0: " + rank_list(missing) + " did not join at " + where + " within " +
                                   std::to_string(options.timeout.count()) + " s (distributed.timeout): " + joined(missing),
                               "start every rank with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE (" + std::to_string(world_size) +
                                   "), or let one launcher start them all (torchrun, srun, gputrain train --nproc-per-node); "
                                   "if they start later (a slow node, a queue), raise distributed.timeout");
    }
    report([&] {
      const auto missing = missing_ranks(store, world_size);
      return "waiting for the other ranks at " + where + ": " + joined(missing) + ", not yet " + rank_list(missing);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Store> meet_at_rank_zero(const RankEnvironment& env, const RendezvousOptions& options) {
  if (env.world_size > 1 && env.master_addr.empty())
    throw UsageError("MASTER_ADDR is not set: " + options.engine + " ranks meet at rank 0's address",
                     "launch with torchrun, gputrain train --nproc-per-node, or srun (which gives the first node); "
                     "or export MASTER_ADDR and MASTER_PORT");
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port > 0 ? env.master_port : c10d::TCPStoreOptions::kDefaultPort);
  store_options.isServer = env.rank == 0;
  store_options.waitWorkers = false;  // wait_for_ranks waits, hearing stop signals and saying who is missing
  store_options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
  const std::string host = env.master_addr.empty() ? "127.0.0.1" : env.master_addr;
  const std::string where = host + ":" + std::to_string(store_options.port);
  QuietC10d quiet;
  auto store = env.rank == 0 ? host_store(host, store_options) : reach_store(host, store_options, env.rank, options);
  store->setTimeout(store_options.timeout);
  store->set(joined_key(env.rank), std::vector<std::uint8_t>{1});
  store->add("gputrain/joined", 1);
  if (env.rank == 0) wait_for_ranks(*store, where, env.world_size, options);
  return store;
}

void wait_on_host(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what, int rank, std::chrono::seconds timeout,
                  const std::string& remedy) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!work->isCompleted()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw CommunicationError("rank " + std::to_string(rank) + ": " + what + " did not finish within " + std::to_string(timeout.count()) +
                                   " s: another rank stopped or hangs (any collective issued before it may be the one stuck)",
                               remedy);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": " + what + " failed: " + e.what(), remedy);
  }
}

void broadcast_on_host(c10d::Backend& group, const std::vector<at::Tensor>& tensors, int root, const std::string& what, int rank,
                       std::chrono::seconds timeout, const std::string& remedy) {
  for (const auto& t : tensors) {
    std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    wait_on_host(group.broadcast(one, opts), what, rank, timeout, remedy);
    if (!one[0].is_same(t)) t.copy_(one[0]);
  }
}

}  // namespace gputrain::dist

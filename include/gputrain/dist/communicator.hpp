#pragma once
// dist::Communicator: the few collectives data-parallel training needs, behind one interface with
// three engines: NCCL through LibTorch's c10d (TCPStore rendezvous + ProcessGroupNCCL) for GPU
// ranks; for CPU ranks, MPI (Open MPI) when mpirun started them, and c10d's Gloo when another
// launcher did (torchrun, srun, our launcher across nodes), since those processes are no MPI job.
// No transport of our own: these move every byte.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/rank_environment.hpp"

namespace gputrain::dist {

enum class Backend { nccl, mpi, gloo };

/// "nccl", "mpi" or "gloo".
std::string to_string(Backend backend);

/// `distributed.backend` for ranks that `launcher` starts or started: RankEnvironment::launcher
/// ("torchrun", "slurm", "mpirun"), or "" for our launcher on one node. "auto" is NCCL on a GPU; on
/// the CPU it is MPI under mpirun and for our one-node launcher (which starts CPU ranks with
/// mpirun), and Gloo under torchrun and srun. Refused with a UsageError: "nccl" on the CPU, "mpi"
/// or "gloo" on a GPU, "mpi" for ranks torchrun started (they are no MPI job: the fix names the
/// command that works), and a backend this build lacks (see backend_available).
Backend choose_backend(const std::string& setting, c10::Device device, const std::string& launcher = "");

/// Whether this build has the backend: MPI needs Open MPI at build time (libopenmpi-dev), NCCL
/// needs the nccl.h of the NCCL that LibTorch loads, Gloo needs Gloo's headers (libgloo-dev).
bool backend_available(Backend backend);

/// A collective failed, or did not finish within the timeout: a peer rank died or hangs.
class CommunicationError : public Error {
 public:
  CommunicationError(const std::string& message, std::string remedy);
};

/// A collective in flight.
class Work {
 public:
  virtual ~Work() = default;
  /// Returns once the result may be used: on the CPU when it is there; on a GPU once the current
  /// stream is ordered after it. Throws CommunicationError when it failed or timed out.
  virtual void wait() = 0;
  /// After wait(): how long the engine spent on it, when it can tell (MPI: yes; NCCL runs it on a
  /// GPU stream: no). Against the time a step waited for it, this gives the share hidden.
  virtual std::optional<double> seconds() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Backend backend() const = 0;
  /// Sums `tensor` (contiguous, on this communicator's device) across ranks in place, in the
  /// background. `what` names the operation in errors ("gradient bucket 2 of step 17"). Every
  /// rank must issue the same collectives in the same order.
  virtual std::shared_ptr<Work> all_reduce_sum(at::Tensor tensor, const std::string& what) = 0;
  /// Overwrites every rank's tensors with rank `root`'s (same shapes and dtypes everywhere).
  virtual void broadcast(const std::vector<at::Tensor>& tensors, int root, const std::string& what) = 0;
  /// broadcast's one-tensor form in the background (`tensor` contiguous): wait() before using
  /// it, and on a GPU the host goes on meanwhile. By default the blocking broadcast, done.
  virtual std::shared_ptr<Work> start_broadcast(at::Tensor tensor, int root, const std::string& what);
  /// Every rank's `values` (the same count on every rank), concatenated in rank order.
  virtual std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string& what) = 0;
  /// From now on, CUDA graphs that hold this communicator's collectives replay: all_gather must
  /// then stay apart from them (NCCL: it moves to a Gloo group). Every rank calls it at the same
  /// point. By default nothing changes.
  virtual void graphs_hold_collectives() {}
};

/// How to connect.
struct CommunicatorOptions {
  Backend backend = Backend::mpi;
  c10::Device device{c10::kCPU};      ///< cuda:LOCAL_RANK for NCCL
  std::chrono::seconds timeout{300};  ///< a collective (or the rendezvous) that takes longer is an error
  std::ostream* progress = nullptr;   ///< where a long rendezvous says who it waits for (NCCL, Gloo)
};

/// Joins the run described by `env`. NCCL: rank 0 hosts a TCPStore at MASTER_ADDR:MASTER_PORT and
/// every rank creates its ProcessGroupNCCL on `options.device`. MPI: MPI_Init_thread (once per
/// process); the world must be the one mpirun started, and its size must match `env`.
std::unique_ptr<Communicator> connect(const RankEnvironment& env, const CommunicatorOptions& options);

/// Ends this rank's part in a run that failed. With MPI and other ranks this is MPI_Abort, which stops every rank
/// of the job (mpirun then names this one) and does not return; otherwise it returns at once (NCCL
/// peers notice the missing rank within their timeout, and our launcher stops them sooner).
void end_failed_run(int exit_code);

}  // namespace gputrain::dist

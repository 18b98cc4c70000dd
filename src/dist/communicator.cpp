#include "gputrain/dist/communicator.hpp"

#include "core/build_features.hpp"
#include "engines.hpp"

namespace gputrain::dist {

CommunicationError::CommunicationError(const std::string& message, std::string remedy)
    : Error(message, std::move(remedy), ExitCode::failure) {}

std::string to_string(Backend backend) {
  switch (backend) {
    case Backend::nccl:
      return "nccl";
    case Backend::mpi:
      return "mpi";
    case Backend::gloo:
      return "gloo";
  }
  return "?";
}

bool backend_available(Backend backend) {
#if GPUTRAIN_HAVE_MPI
  if (backend == Backend::mpi) return true;
#endif
#if GPUTRAIN_HAVE_NCCL
  if (backend == Backend::nccl) return true;
#endif
#if GPUTRAIN_HAVE_GLOO
  if (backend == Backend::gloo) return true;
#endif
  (void)backend;
  return false;
}

namespace {

// "auto" on the CPU: MPI for the ranks mpirun starts (our one-node launcher uses it when it can),
// Gloo for torchrun's (no MPI job); srun's are Gloo's, or MPI's through srun --mpi=pmix.
Backend cpu_backend(const std::string& launcher) {
  if (launcher == "mpirun") return Backend::mpi;
  if (launcher.empty()) return backend_available(Backend::mpi) || !backend_available(Backend::gloo) ? Backend::mpi : Backend::gloo;
  if (launcher == "slurm" && !backend_available(Backend::gloo) && backend_available(Backend::mpi)) return Backend::mpi;
  return Backend::gloo;
}

std::string missing_backend_remedy(Backend backend) {
  switch (backend) {
    case Backend::mpi:
      return "install Open MPI (apt-get install libopenmpi-dev openmpi-bin) and rebuild (scripts/bootstrap.sh build)";
    case Backend::gloo:
      return "install Gloo's headers (apt-get install libgloo-dev) and rebuild (scripts/bootstrap.sh build), or start the CPU ranks "
             "with mpirun (gputrain train CONFIG --nproc-per-node N does)";
    case Backend::nccl:
      break;
  }
  return "install Gloo's headers (apt-get install libgloo-dev: GPU ranks whose steps are CUDA graphs agree on each step over Gloo) and "
         "rebuild against the torch wheel (its nvidia-nccl package holds nccl.h), or pass -DGPUTRAIN_NCCL_INCLUDE_DIR=<the include "
         "folder of the NCCL LibTorch loads>";
}

}  // namespace

Backend choose_backend(const std::string& setting, c10::Device device, const std::string& launcher) {
  Backend backend;
  if (setting == "auto") {
    backend = device.is_cuda() ? Backend::nccl : cpu_backend(launcher);
  } else if (setting == "nccl") {
    if (!device.is_cuda())
      throw UsageError("distributed.backend: nccl needs a GPU, and this run is on the " + device.str(),
                       "use distributed.backend: auto (MPI or Gloo) for CPU ranks, or device: cuda");
    backend = Backend::nccl;
  } else if (setting == "mpi" || setting == "gloo") {
    backend = setting == "mpi" ? Backend::mpi : Backend::gloo;
    if (device.is_cuda())
      throw UsageError("distributed.backend: " + setting + " reduces CPU tensors only, and this run is on " + device.str(),
                       "use distributed.backend: nccl (or auto) for GPU ranks, or device: cpu");
    if (backend == Backend::mpi && launcher == "torchrun")
      throw UsageError("distributed.backend: mpi, but torchrun started these ranks: they are no MPI job, so MPI sees one rank in each",
                       "use distributed.backend: auto (Gloo under torchrun), or start the ranks with mpirun (mpirun -np N gputrain "
                       "train CONFIG) or gputrain train CONFIG --nproc-per-node N");
  } else {
    throw UsageError("distributed.backend: '" + setting + "' is not one of auto, nccl, mpi, gloo", "use auto, nccl, mpi or gloo");
  }
  if (!backend_available(backend))
    throw EnvironmentError("this build of gputrain has no " + to_string(backend) + " support", missing_backend_remedy(backend));
  return backend;
}

namespace {

class DoneWork final : public Work {
 public:
  void wait() override {}
  std::optional<double> seconds() const override { return std::nullopt; }
};

}  // namespace

std::shared_ptr<Work> Communicator::start_broadcast(at::Tensor tensor, int root, const std::string& what) {
  broadcast({std::move(tensor)}, root, what);
  return std::make_shared<DoneWork>();
}

std::unique_ptr<Communicator> connect(const RankEnvironment& env, const CommunicatorOptions& options) {
  (void)choose_backend(to_string(options.backend), options.device, env.launcher);  // availability and device checks
#if GPUTRAIN_HAVE_MPI
  if (options.backend == Backend::mpi) return connect_mpi(env, options);
#endif
#if GPUTRAIN_HAVE_NCCL
  if (options.backend == Backend::nccl) return connect_nccl(env, options);
#endif
#if GPUTRAIN_HAVE_GLOO
  if (options.backend == Backend::gloo) return connect_gloo(env, options);
#endif
  (void)env;
  throw EnvironmentError("unreachable: no " + to_string(options.backend) + " engine", "");
}

void end_failed_run(int exit_code) {
#if GPUTRAIN_HAVE_MPI
  abort_mpi(exit_code);
#else
  (void)exit_code;
#endif
}

}  // namespace gputrain::dist

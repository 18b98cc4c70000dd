#include "gputrain/dist/communicator.hpp"

#include "engines.hpp"

namespace gputrain::dist {

CommunicationError::CommunicationError(const std::string& message, std::string remedy)
    : Error(message, std::move(remedy), ExitCode::failure) {}

std::string to_string(Backend backend) { return backend == Backend::nccl ? "nccl" : "mpi"; }

bool backend_available(Backend backend) {
#if GPUTRAIN_HAVE_MPI
  if (backend == Backend::mpi) return true;
#endif
#if GPUTRAIN_HAVE_NCCL
  if (backend == Backend::nccl) return true;
#endif
  (void)backend;
  return false;
}

Backend choose_backend(const std::string& setting, c10::Device device) {
  Backend backend;
  if (setting == "auto") {
    backend = device.is_cuda() ? Backend::nccl : Backend::mpi;
  } else if (setting == "nccl") {
    if (!device.is_cuda())
      throw UsageError("distributed.backend: nccl needs a GPU, and this run is on the " + device.str(),
                       "use distributed.backend: mpi (or auto) for CPU ranks, or device: cuda");
    backend = Backend::nccl;
  } else if (setting == "mpi") {
    if (device.is_cuda())
      throw UsageError("distributed.backend: mpi reduces CPU tensors only, and this run is on " + device.str(),
                       "use distributed.backend: nccl (or auto) for GPU ranks, or device: cpu");
    backend = Backend::mpi;
  } else {
    throw UsageError("distributed.backend: '" + setting + "' is not one of auto, nccl, mpi", "use auto, nccl or mpi");
  }
  if (!backend_available(backend))
    throw EnvironmentError("this build of gputrain has no " + to_string(backend) + " support",
                           backend == Backend::mpi
                               ? "install Open MPI (apt-get install libopenmpi-dev openmpi-bin) and rebuild (scripts/bootstrap.sh build)"
                               : "rebuild against the torch wheel (its nvidia-nccl package holds nccl.h), or pass "
                                 "-DGPUTRAIN_NCCL_INCLUDE_DIR=<the include folder of the NCCL LibTorch loads>");
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
  (void)choose_backend(to_string(options.backend), options.device);  // availability and device checks
#if GPUTRAIN_HAVE_MPI
  if (options.backend == Backend::mpi) return connect_mpi(env, options);
#endif
#if GPUTRAIN_HAVE_NCCL
  if (options.backend == Backend::nccl) return connect_nccl(env, options);
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

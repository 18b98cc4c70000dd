#pragma once
// The engines behind dist::connect(); each file is compiled only when the build has its library
// (GPUTRAIN_HAVE_MPI, GPUTRAIN_HAVE_NCCL, GPUTRAIN_HAVE_GLOO in core/build_features.hpp).

#include <memory>

#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {

std::unique_ptr<Communicator> connect_mpi(const RankEnvironment& env, const CommunicatorOptions& options);
std::unique_ptr<Communicator> connect_nccl(const RankEnvironment& env, const CommunicatorOptions& options);
std::unique_ptr<Communicator> connect_gloo(const RankEnvironment& env, const CommunicatorOptions& options);

/// MPI_Abort when MPI runs with other ranks (does not return); nothing otherwise.
void abort_mpi(int exit_code);

}  // namespace gputrain::dist

// distributed.backend: which engine reduces for the ranks a launcher starts, and the refusals that
// come before any rank connects.
#include <gtest/gtest.h>

#include "gputrain/core/error.hpp"
#include "gputrain/dist/communicator.hpp"

using namespace gputrain;
using namespace gputrain::dist;

namespace {

const c10::Device cpu(c10::kCPU);
const c10::Device gpu(c10::kCUDA, 0);

std::string refusal(const std::string& setting, c10::Device device, const std::string& launcher) {
  try {
    choose_backend(setting, device, launcher);
  } catch (const Error& e) {
    return std::string(e.what()) + " | fix: " + e.remedy();
  }
  return "";
}

}  // namespace

TEST(BackendChoice, AutoIsNcclOnAGpuWhoeverStartedTheRanks) {
  if (!backend_available(Backend::nccl)) GTEST_SKIP() << "this build has no NCCL";
  for (const char* launcher : {"", "torchrun", "slurm", "mpirun"}) EXPECT_EQ(choose_backend("auto", gpu, launcher), Backend::nccl);
}

// mpirun's ranks are an MPI job; torchrun's and srun's are not, so Gloo reduces for them.
TEST(BackendChoice, AutoOnTheCpuIsMpiUnderMpirunAndGlooUnderOtherLaunchers) {
  if (!backend_available(Backend::mpi) || !backend_available(Backend::gloo)) GTEST_SKIP() << "this build lacks MPI or Gloo";
  EXPECT_EQ(choose_backend("auto", cpu, "mpirun"), Backend::mpi);
  EXPECT_EQ(choose_backend("auto", cpu, ""), Backend::mpi);  // our launcher, one node: it starts mpirun
  EXPECT_EQ(choose_backend("auto", cpu, "torchrun"), Backend::gloo);
  EXPECT_EQ(choose_backend("auto", cpu, "slurm"), Backend::gloo);
}

TEST(BackendChoice, MpiForTorchrunsRanksIsRefusedWithTheCommandsThatWork) {
  if (!backend_available(Backend::mpi)) GTEST_SKIP() << "this build has no MPI";
  const auto text = refusal("mpi", cpu, "torchrun");
  EXPECT_NE(text.find("torchrun started these ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("mpirun -np N gputrain train CONFIG"), std::string::npos) << text;
  EXPECT_NE(text.find("--nproc-per-node N"), std::string::npos) << text;
  EXPECT_EQ(choose_backend("mpi", cpu, "slurm"), Backend::mpi);  // srun --mpi=pmix makes an MPI job
}

TEST(BackendChoice, EnginesOnTheWrongDeviceAndUnknownNamesAreRefused) {
  EXPECT_NE(refusal("nccl", cpu, "").find("nccl needs a GPU"), std::string::npos);
  EXPECT_NE(refusal("gloo", gpu, "").find("gloo reduces CPU tensors only"), std::string::npos);
  EXPECT_NE(refusal("mpi", gpu, "").find("mpi reduces CPU tensors only"), std::string::npos);
  EXPECT_NE(refusal("ucc", cpu, "").find("not one of auto, nccl, mpi, gloo"), std::string::npos);
  EXPECT_EQ(to_string(Backend::gloo), "gloo");
}

#include "device_settings.hpp"

#include <ATen/Context.h>

#include <cstdlib>

namespace gputrain::train {

void apply_backend_settings(const TrainConfig& t) {
  auto& ctx = at::globalContext();
  ctx.setFloat32MatmulPrecision(t.tf32 ? "high" : "highest");
  ctx.setAllowTF32CuDNN(t.tf32);
  ctx.setBenchmarkCuDNN(t.cudnn_benchmark && !t.deterministic);
  ctx.setDeterministicCuDNN(t.deterministic);
  if (t.deterministic) {
    // cuBLAS is deterministic only with a fixed workspace, chosen before its first use.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  }
  ctx.setDeterministicAlgorithms(t.deterministic, /*warn_only=*/false);
}

}  // namespace gputrain::train

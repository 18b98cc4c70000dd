#pragma once
// What the two-rank tests (tests/dist) share: the tests' own line to the other rank, run
// directories both ranks use, and rank 0's tensors on both. The binary runs under `mpirun -np 2`.

#include <ATen/ATen.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gputrain/dist/communicator.hpp"
#include "gputrain/train/config.hpp"
#include "gputrain/train/trainer.hpp"
#include "support/tensor_checks.hpp"

namespace two_ranks {

using gputrain::test_support::flat_parameters;

/// The test's own communicator to the other rank (between trainer runs only).
gputrain::dist::Communicator& peers();
int my_rank();
void barrier();
/// A scratch folder of this build's test tree.
std::filesystem::path scratch(const std::string& name);
/// The tests' small MLP run on `name`'s run directory, with `overrides`; `fresh`: rank 0 empties
/// the directory first (a collective: both ranks must ask together).
gputrain::train::Config run(const std::string& name, std::vector<std::string> overrides, bool fresh = true);
/// Rank 0's tensor, on both ranks.
at::Tensor from_rank0(const at::Tensor& local);

/// Runs `body` with the launcher variables hidden, as a plain single-process run sees them.
template <typename Body>
void as_plain_process(Body body) {
  const char* names[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v), unsetenv(n);
  body();
  for (const auto& [n, v] : saved) setenv(n.c_str(), v.c_str(), 1);
}

}  // namespace two_ranks

#include "support/two_ranks.hpp"

#include <cstdlib>
#include <iostream>

#include "gputrain/dist/rank_environment.hpp"
#include "gputrain/train/model.hpp"
#include "support/test_paths.hpp"

using namespace gputrain;
using namespace gputrain::train;
namespace fs = std::filesystem;

namespace two_ranks {

// The test's own line to the other rank (between trainer runs only).
dist::Communicator& peers() {
  static std::unique_ptr<dist::Communicator> comm = [] {
    const auto env = dist::read_rank_environment();
    if (!env || env->world_size != 2) {
      std::cerr << "run this test under `mpirun -np 2`\n";
      std::exit(2);
    }
    return dist::connect(*env, dist::CommunicatorOptions{dist::Backend::mpi, c10::Device(c10::kCPU), std::chrono::seconds(120)});
  }();
  return *comm;
}

int my_rank() { return peers().rank(); }
void barrier() { peers().all_gather({0}, "the test's barrier"); }

// Where the runs write: this build's own test folder, not the shared temp directory, so two builds
// testing at once never share a run directory. (TMPDIR stays as it is: mpirun keeps its session
// sockets there, and a deep build folder would make their paths too long.)
fs::path scratch(const std::string& name) { return fs::path(gputrain::test_support::test_tmpdir()) / ("gputrain-two-ranks-" + name); }

// A run directory shared by both ranks; `fresh`: emptied by rank 0 before either starts (a
// collective: both ranks must ask for it together).
Config run(const std::string& name, std::vector<std::string> overrides, bool fresh) {
  const auto dir = scratch(name);
  if (fresh) {
    if (my_rank() == 0) fs::remove_all(dir);
    barrier();
  }
  std::vector<std::string> all{"model.name=mlp",
                               "model.hidden=[32, 16]",
                               "model.dropout=0",
                               "data.shape=[10]",
                               "data.classes=3",
                               "data.samples=96",
                               "data.val_samples=32",
                               "train.epochs=2",
                               "train.batch_size=8",
                               "train.deterministic=true",
                               "device=cpu",
                               "optimizer.name=sgd",
                               "optimizer.lr=0.1",
                               "logging.progress=off",
                               "logging.every_steps=1",
                               "distributed.timeout=60",
                               "logging.dir=" + dir.string()};
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_config({{}, all, ""});
}

// Rank 0's tensor, on both ranks.
at::Tensor from_rank0(const at::Tensor& local) {
  auto copy = local.clone();
  peers().broadcast({copy}, 0, "the test's broadcast");
  return copy;
}

}  // namespace two_ranks

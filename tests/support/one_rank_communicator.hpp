#pragma once
// A communicator for a world of one rank: every collective is the identity. For tests of what
// runs on top of collectives (the synchronised batch norm's math) in one process; the exchanges
// between real ranks are tested under mpirun (tests/dist).

#include <memory>
#include <string>
#include <vector>

#include "gputrain/dist/communicator.hpp"

namespace gputrain::test_support {

class OneRankCommunicator final : public dist::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  dist::Backend backend() const override { return dist::Backend::mpi; }
  std::shared_ptr<dist::Work> all_reduce_sum(at::Tensor, const std::string& what) override {
    exchanges.push_back(what);
    return std::make_shared<Done>();
  }
  void broadcast(const std::vector<at::Tensor>&, int, const std::string&) override {}
  std::vector<std::int64_t> all_gather(const std::vector<std::int64_t>& values, const std::string&) override { return values; }

  std::vector<std::string> exchanges;  ///< what each all-reduce was for, in order

 private:
  struct Done final : dist::Work {
    void wait() override {}
    std::optional<double> seconds() const override { return 0.0; }
  };
};

}  // namespace gputrain::test_support

// LibTorch carries Gloo compiled in (its wheel exports ProcessGroupGloo) but ships no gloo/
// headers; Debian's libgloo-dev provides them. Only pointers to Gloo's classes cross into our
// code: ProcessGroupGloo builds its devices and contexts itself (cmake/GputrainDist.cmake).

#include "gloo_group.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>
#include <exception>

#include "c10d_rendezvous.hpp"
#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {
namespace {

std::shared_ptr<::gloo::transport::Device> gloo_device(int rank) {
  try {
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
      return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    return c10d::ProcessGroupGloo::createDefaultDevice();
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": Gloo found no network interface to use: " + e.what(),
                             "export GLOO_SOCKET_IFNAME=<the interface the nodes reach each other on> (ip -brief address)");
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> connect_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::seconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  options->devices.push_back(gloo_device(rank));
  try {
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": Gloo could not connect the ranks: " + e.what(),
                             "check that every node reaches the others' addresses (export GLOO_SOCKET_IFNAME=<interface> to pick "
                             "one), and see the other ranks' output");
  }
}

std::vector<std::int64_t> gloo_all_gather(c10d::Backend& group, const std::vector<std::int64_t>& values, const std::string& what, int rank,
                                          std::chrono::seconds timeout, const std::string& remedy) {
  const auto options = at::TensorOptions().dtype(at::kLong);
  std::vector<at::Tensor> input{at::tensor(values, options)};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < group.getSize(); ++r) output[0].push_back(at::empty({static_cast<std::int64_t>(values.size())}, options));
  wait_on_host(group.allgather(output, input), what, rank, timeout, remedy);
  std::vector<std::int64_t> all;
  all.reserve(values.size() * output[0].size());
  for (const auto& part : output[0]) all.insert(all.end(), part.data_ptr<std::int64_t>(), part.data_ptr<std::int64_t>() + part.numel());
  return all;
}

}  // namespace gputrain::dist

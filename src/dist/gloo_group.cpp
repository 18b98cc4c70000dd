// LibTorch carries Gloo compiled in (its wheel exports ProcessGroupGloo) but ships no gloo/
// headers; Debian's libgloo-dev provides them. Only pointers to Gloo's classes cross into our
// code: ProcessGroupGloo builds its devices and contexts itself (cmake/GputrainDist.cmake).

#include "gloo_group.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <arpa/inet.h>
#include <net/if.h>

#include <cstdlib>
#include <exception>

#include "c10d_rendezvous.hpp"
#include "gputrain/dist/communicator.hpp"

namespace gputrain::dist {
namespace {

// Ranks that meet at a loopback address are all on this node: the loopback reaches them all
// without resolving the host's name (which a container may not, and LibTorch then warns).
std::shared_ptr<::gloo::transport::Device> gloo_device(int rank, const std::string& master_addr) {
  try {
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
      return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    if (master_addr.empty() || is_loopback_address(master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    // Nodes of a GPU job often name their network for NCCL only: the same interface serves Gloo.
    if (const char* nccl = std::getenv("NCCL_SOCKET_IFNAME"))
      if (const auto interface = nccl_interface(nccl); !interface.empty())
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    return c10d::ProcessGroupGloo::createDefaultDevice();
  } catch (const std::exception& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": Gloo found no network interface to use: " + e.what(),
                             "export GLOO_SOCKET_IFNAME=<the interface the nodes reach each other on> (ip -brief address)");
  }
}

}  // namespace

bool is_loopback_address(const std::string& address) {
  if (address == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, address.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string nccl_interface(const std::string& setting) {
  const std::string name = !setting.empty() && setting[0] == '=' ? setting.substr(1) : setting;
  if (name.empty() || name.find_first_of("^=, ") != std::string::npos) return "";
  return if_nametoindex(name.c_str()) != 0 ? name : "";
}

c10::intrusive_ptr<c10d::Backend> connect_gloo_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::seconds timeout, const std::string& master_addr) {
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  options->devices.push_back(gloo_device(rank, master_addr));
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

// Gloo groups on one TCPStore, as the NCCL engine holds them: its host values (the step agreement)
// go over a Gloo group under a prefix of the store its NCCL group met at. Two ranks as two threads
// of this process, on 127.0.0.1.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <future>

#include "dist/gloo_group.hpp"
#include "gputrain/core/error.hpp"

using namespace gputrain;
using namespace gputrain::dist;

namespace {

constexpr std::chrono::seconds kTimeout{30};

c10::intrusive_ptr<c10d::TCPStore> open_store(bool server, std::uint16_t port, int workers) {
  c10d::TCPStoreOptions options;
  options.port = port;
  options.isServer = server;
  options.numWorkers = static_cast<std::size_t>(workers);
  options.waitWorkers = false;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout);
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}

c10::intrusive_ptr<c10d::Store> under(const std::string& prefix, const c10::intrusive_ptr<c10d::TCPStore>& store) {
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

// One rank: a group on the plain store and one under "host_values", each gathering its own numbers.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> rank_gathers(int rank, const c10::intrusive_ptr<c10d::TCPStore>& store) {
  auto plain = connect_gloo_group(store, rank, 2, kTimeout, "127.0.0.1");
  auto host_values = connect_gloo_group(under("host_values", store), rank, 2, kTimeout, "");
  auto first = gloo_all_gather(*plain, {rank, 10 + rank}, "the plain group's gather", rank, kTimeout, "");
  auto second = gloo_all_gather(*host_values, {100 + rank}, "the agreement before step 1", rank, kTimeout, "");
  return {first, second};
}

}  // namespace

TEST(GlooGroup, AGroupUnderAPrefixBesideAnotherOnOneStoreGathersInRankOrder) {
  auto server = open_store(true, 0, 2);
  auto client = open_store(false, static_cast<std::uint16_t>(server->getPort()), 2);
  auto zero = std::async(std::launch::async, [&] { return rank_gathers(0, server); });
  auto one = std::async(std::launch::async, [&] { return rank_gathers(1, client); });
  for (auto* result : {&zero, &one}) {
    const auto [plain, host_values] = result->get();
    EXPECT_EQ(plain, (std::vector<std::int64_t>{0, 10, 1, 11}));
    EXPECT_EQ(host_values, (std::vector<std::int64_t>{100, 101}));
  }
}

TEST(GlooGroup, OnlyALoopbackMasterAddressKeepsTheRanksOnTheLoopback) {
  for (const char* address : {"localhost", "127.0.0.1", "127.0.1.1", "::1"}) EXPECT_TRUE(is_loopback_address(address)) << address;
  for (const char* address : {"", "10.231.7.1", "node-0", "localhost.example.org", "127.example.org", "1127.0.0.1", "::ffff:10.0.0.1"})
    EXPECT_FALSE(is_loopback_address(address)) << address;
}

// NCCL_SOCKET_IFNAME serves Gloo only where it names one interface this host has: "lo" is on
// every Linux host; a prefix NCCL would widen, a list, an exclusion or a missing name is no choice.
TEST(GlooGroup, NcclsInterfaceSettingCountsOnlyWhenItNamesOneInterfaceThisHostHas) {
  EXPECT_EQ(nccl_interface("lo"), "lo");
  EXPECT_EQ(nccl_interface("=lo"), "lo");
  for (const char* setting : {"", "=", "^docker", "^lo", "lo,eth0", "l", "no-such-interface0"})
    EXPECT_EQ(nccl_interface(setting), "") << setting;
}

// A rank whose peer never joins gets our error, naming the rank and the fix, within the timeout.
TEST(GlooGroup, APeerThatNeverJoinsIsAnErrorNamingTheRankAndTheFix) {
  auto server = open_store(true, 0, 1);
  try {
    connect_gloo_group(under("host_values", server), 0, 2, std::chrono::seconds(2), "127.0.0.1");
    FAIL() << "connected without the second rank";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: Gloo could not connect the ranks"), std::string::npos) << e.what();
    EXPECT_NE(e.remedy().find("GLOO_SOCKET_IFNAME"), std::string::npos) << e.remedy();
  }
}

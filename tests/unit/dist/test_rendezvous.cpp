// The rendezvous at rank 0's TCPStore (NCCL and Gloo ranks meet there): ranks as threads of this
// process on 127.0.0.1. A rank that never comes, a rank 0 that is not there, a taken port and a
// stop signal each end the wait with our error, not LibTorch's backtrace or a silent hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <sstream>
#include <thread>

#include "dist/c10d_rendezvous.hpp"
#include "gputrain/core/error.hpp"
#include "gputrain/core/stop_signal.hpp"
#include "gputrain/dist/communicator.hpp"
#include "gputrain/dist/launcher.hpp"
#include "support/text_checks.hpp"

using gputrain::test_support::contains;
using namespace gputrain;
using namespace gputrain::dist;

namespace {

RankEnvironment rank_of(int rank, int world_size, int port) {
  RankEnvironment env;
  env.rank = rank;
  env.world_size = world_size;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  return env;
}

RendezvousOptions quick(std::ostream* progress = nullptr) {
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(1);
  options.engine = "Gloo";
  options.progress = progress;
  options.first_report = std::chrono::milliseconds(100);
  options.report_every = std::chrono::milliseconds(300);
  return options;
}

}  // namespace

TEST(Rendezvous, RankZeroReturnsOnceEveryRankHasJoined) {
  const int port = free_local_port();
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(30);
  auto zero = std::async(std::launch::async, [&] { return meet_at_rank_zero(rank_of(0, 3, port), options); });
  auto one = std::async(std::launch::async, [&] { return meet_at_rank_zero(rank_of(1, 3, port), options); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 2 comes late
  EXPECT_EQ(zero.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "rank 0 went on without rank 2";
  auto two = std::async(std::launch::async, [&] { return meet_at_rank_zero(rank_of(2, 3, port), options); });
  const auto store = zero.get();
  EXPECT_EQ(store->add("gputrain/joined", 0), 3);
  one.get();
  two.get();
}

TEST(Rendezvous, RanksThatNeverJoinAreNamedAfterTheTimeout) {
  const int port = free_local_port();
  std::ostringstream progress;
  try {
    meet_at_rank_zero(rank_of(0, 11, port), quick(&progress));
    FAIL() << "met without ranks 1-10";
  } catch (const CommunicationError& e) {
    const std::string where = "127.0.0.1:" + std::to_string(port);
    EXPECT_TRUE(contains(e.what(), "rank 0: ranks 1, 2, 3, 4, 5, 6, 7, 8 and 2 more did not join at " + where + " within 1 s")) << e.what();
    EXPECT_TRUE(contains(e.what(), "1 of 11 joined")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "WORLD_SIZE (11)")) << e.remedy();
    EXPECT_TRUE(contains(e.remedy(), "distributed.timeout")) << e.remedy();
  }
  EXPECT_TRUE(
      contains(progress.str(), "waiting for the other ranks at 127.0.0.1:" + std::to_string(port) + ": 1 of 11 joined, not yet ranks 1,"))
      << progress.str();
}

TEST(Rendezvous, ARankThatCannotReachRankZeroSaysWhereItLooked) {
  const int port = free_local_port();
  try {
    meet_at_rank_zero(rank_of(1, 2, port), quick());
    FAIL() << "reached a rank 0 that is not there";
  } catch (const CommunicationError& e) {
    EXPECT_TRUE(contains(e.what(), "rank 1 could not reach rank 0 at 127.0.0.1:" + std::to_string(port) + " within 1 s")) << e.what();
    EXPECT_FALSE(contains(e.what(), "Exception raised from")) << e.what();  // LibTorch's backtrace
    EXPECT_TRUE(contains(e.remedy(), "is rank 0 running")) << e.remedy();
  }
}

TEST(Rendezvous, ATakenPortIsNamedWithItsFix) {
  const int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  socklen_t size = sizeof address;
  ::getsockname(taken, reinterpret_cast<sockaddr*>(&address), &size);
  const int port = ntohs(address.sin_port);
  try {
    meet_at_rank_zero(rank_of(0, 2, port), quick());
    FAIL() << "listened on a taken port";
  } catch (const CommunicationError& e) {
    EXPECT_TRUE(contains(e.what(), "rank 0 could not listen at port " + std::to_string(port))) << e.what();
    EXPECT_FALSE(contains(e.what(), "Exception raised from")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "pick another MASTER_PORT")) << e.remedy();
  }
  ::close(taken);
}

TEST(Rendezvous, AMasterAddressThatIsNotRankZerosNodeIsNamed) {
  auto env = rank_of(0, 2, free_local_port());
  env.master_addr = "no-such-host.invalid";  // RFC 2606: never resolves
  try {
    meet_at_rank_zero(env, quick());
    FAIL() << "rank 0 reached a host that does not exist";
  } catch (const CommunicationError& e) {
    EXPECT_TRUE(contains(e.what(), "rank 0 could not reach its own rendezvous at no-such-host.invalid:")) << e.what();
    EXPECT_FALSE(contains(e.what(), "Exception raised from")) << e.what();
    EXPECT_TRUE(contains(e.remedy(), "MASTER_ADDR must name rank 0's node")) << e.remedy();
  }
}

TEST(Rendezvous, AStopSignalEndsTheWaitWithNothingToResume) {
  const int port = free_local_port();
  RendezvousOptions options;
  options.timeout = std::chrono::seconds(60);
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    core::request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  try {
    meet_at_rank_zero(rank_of(0, 2, port), options);
    FAIL() << "met without rank 1";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::interrupted);
    EXPECT_TRUE(contains(e.what(), "interrupted while waiting for the other ranks at 127.0.0.1:")) << e.what();
  }
  stopper.join();
  core::clear_stop_request();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

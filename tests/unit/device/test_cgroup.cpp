#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "gputrain/core/units.hpp"
#include "gputrain/device/cgroup.hpp"
#include "gputrain/device/system_info.hpp"
#include "support/test_paths.hpp"

using namespace gputrain::device;
using gputrain::core::kGiB;

namespace {
CgroupLimits fixture(const std::string& name) {
  return read_cgroup_limits(std::string(gputrain::test_support::test_data_dir()) + "/cgroup/" + name);
}
}  // namespace

TEST(CgroupV2, TightestLimitAlongThePathWins) {
  const auto limits = fixture("v2_limited");
  EXPECT_EQ(limits.version, 2);
  EXPECT_EQ(limits.path, "/job.slice/train.scope");
  ASSERT_TRUE(limits.cpu_quota_cores.has_value());
  EXPECT_DOUBLE_EQ(*limits.cpu_quota_cores, 2.5);
  ASSERT_TRUE(limits.memory_limit.has_value());
  EXPECT_EQ(*limits.memory_limit, 8589934592ULL);  // the parent's limit, the leaf says max
  EXPECT_EQ(limits.cpuset_cores, 8);               // the parent's cpuset, 0-3,8-11
}

TEST(CgroupV2, MaxMeansUnlimited) {
  const auto limits = fixture("v2_unlimited");
  EXPECT_EQ(limits.version, 2);
  EXPECT_FALSE(limits.cpu_quota_cores.has_value());
  EXPECT_FALSE(limits.memory_limit.has_value());
}

TEST(CgroupV2, NamespacedContainerReadsTheMountRoot) {
  const auto limits = fixture("v2_namespaced");
  EXPECT_DOUBLE_EQ(limits.cpu_quota_cores.value_or(0), 1.5);
  EXPECT_EQ(limits.memory_limit.value_or(0), 2147483648ULL);
}

TEST(CgroupV1, DockerPathMissingUnderTheMountFallsBackToItsRoot) {
  const auto limits = fixture("v1_docker");
  EXPECT_EQ(limits.version, 1);
  EXPECT_DOUBLE_EQ(limits.cpu_quota_cores.value_or(0), 1.5);
  EXPECT_EQ(limits.memory_limit.value_or(0), 2147483648ULL);
  EXPECT_EQ(limits.cpuset_cores, 6);  // the cpuset mount's root: 0-5
}

TEST(CgroupV1, MinusOneQuotaAndHugeMemoryLimitMeanUnlimited) {
  const auto limits = fixture("v1_unlimited");
  EXPECT_EQ(limits.version, 1);
  EXPECT_FALSE(limits.cpu_quota_cores.has_value());
  EXPECT_FALSE(limits.memory_limit.has_value());
}

TEST(Cgroup, NoProcFileMeansNoCgroup) {
  const auto limits = read_cgroup_limits("/nonexistent-root");
  EXPECT_EQ(limits.version, 0);
  EXPECT_FALSE(limits.cpu_quota_cores.has_value());
  EXPECT_FALSE(limits.cpuset_cores.has_value());
  EXPECT_FALSE(fixture("v2_unlimited").cpuset_cores.has_value());
}

TEST(Cgroup, CpuListsAreCounted) {
  EXPECT_EQ(cpu_list_count("0-3,8,10-11"), 7);
  EXPECT_EQ(cpu_list_count("5"), 1);
  EXPECT_EQ(cpu_list_count(""), std::nullopt);
  EXPECT_EQ(cpu_list_count("3-1"), std::nullopt);
  EXPECT_EQ(cpu_list_count("a-b"), std::nullopt);
}

TEST(UsableCores, AffinityCappedByQuotaNeverBelowOne) {
  EXPECT_DOUBLE_EQ(usable_cores(16, std::nullopt), 16);
  EXPECT_DOUBLE_EQ(usable_cores(16, 2.5), 2.5);
  EXPECT_DOUBLE_EQ(usable_cores(2, 8.0), 2);
  EXPECT_DOUBLE_EQ(usable_cores(4, 0.2), 1);
}

TEST(SystemInfo, CollectsFactsOfThisMachine) {
  const auto info = collect_system_info();
  EXPECT_GT(info.logical_cores, 0);
  EXPECT_GT(info.affinity_cores, 0);
  EXPECT_GE(info.usable_cores, 1.0);
  EXPECT_GT(info.ram_total, 0u);
  EXPECT_FALSE(info.kernel.empty());
}

TEST(SystemInfo, MemoryInfoAloneReadsWhatTheFullCollectionDoes) {
  const auto full = collect_system_info();
  const auto memory = read_memory_info();
  EXPECT_EQ(memory.ram_total, full.ram_total);
  EXPECT_GT(memory.ram_available, 0u);
  EXPECT_LE(memory.ram_available, memory.ram_total);
  EXPECT_EQ(memory.memory_limit, full.memory_limit);
}

// Under `ulimit -v`, what may still be allocated is the limit less what the process maps, whatever
// RAM is free; the limit is read in a child, which may lower its own.
TEST(SystemInfo, AnAddressSpaceLimitBoundsWhatIsAvailable) {
  MemoryInfo info;
  info.ram_available = 8 * kGiB;
  EXPECT_EQ(info.available(), 8 * kGiB);
  EXPECT_FALSE(info.address_space_bound());
  info.address_space_left = 2 * kGiB;
  EXPECT_EQ(info.available(), 2 * kGiB);
  EXPECT_TRUE(info.address_space_bound());
  info.memory_limit = 1 * kGiB;  // a tighter cgroup limit bounds it instead
  EXPECT_EQ(info.available(), 1 * kGiB);
  EXPECT_FALSE(info.address_space_bound());

  EXPECT_EXIT(
      {
        std::ifstream statm("/proc/self/statm");
        std::uint64_t pages = 0;
        statm >> pages;
        const std::uint64_t mapped = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        rlimit limit{};
        ::getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = mapped + kGiB;
        ::setrlimit(RLIMIT_AS, &limit);
        const auto left = read_memory_info().address_space_left;
        const auto system = collect_system_info();
        std::_Exit(left && *left > kGiB / 2 && *left <= kGiB && system.address_space_limit == limit.rlim_cur ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// verify's system checks on made-up machines: what each warns about, and the fix it gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#include "checks/check_sets.hpp"
#include "gputrain/core/units.hpp"

using namespace gputrain;
using namespace gputrain::checks;

namespace {

Result run_check(const std::string& id, const Context& context) {
  const auto checks = system_checks();
  const auto check = std::find_if(checks.begin(), checks.end(), [&](const Check& c) { return c.id == id; });
  if (check == checks.end()) throw std::runtime_error("no check " + id);
  return check->run(context);
}

Context machine() {
  Context c;
  c.system.logical_cores = c.system.affinity_cores = 16;
  c.system.usable_cores = 16;
  c.system.ram_total = c.system.ram_available = 64 * core::kGiB;
  c.system.shm = device::DiskSpace{32 * core::kGiB, 32 * core::kGiB};
  return c;
}

// A warning whose detail names each of `in_detail` and whose fix names `in_remedy`.
void expect_warning(const Result& result, std::initializer_list<std::string> in_detail, const std::string& in_remedy) {
  EXPECT_EQ(result.status, Status::warn);
  for (const auto& text : in_detail) EXPECT_NE(result.detail.find(text), std::string::npos) << result.detail;
  EXPECT_NE(result.remedy.find(in_remedy), std::string::npos) << result.remedy;
}

}  // namespace

TEST(SystemChecks, AHealthyMachinePasses) {
  for (const std::string id : {"system.cores", "system.memory", "system.shm"})
    EXPECT_EQ(run_check(id, machine()).status, Status::pass) << id;
}

TEST(SystemChecks, FewUsableCoresWarnWithTheQuotaNamed) {
  auto c = machine();
  c.system.cgroup.cpu_quota_cores = 2.0;
  c.system.usable_cores = 2.0;
  expect_warning(run_check("system.cores", c), {"2.0 usable of 16 logical cores (affinity 16, cgroup quota 2.00)"}, "--cpus");
}

TEST(SystemChecks, AContainersMemoryLimitCountsRatherThanTheHostsRam) {
  auto c = machine();
  c.system.memory_limit = 4 * core::kGiB;
  expect_warning(run_check("system.memory", c), {"cgroup limit 4.00 GiB"}, "--memory");
}

// `ulimit -v` (Grid Engine's h_vmem): allocations fail with RAM free, and CUDA may not start.
TEST(SystemChecks, AnAddressSpaceLimitWarnsWithTheCommandThatLiftsIt) {
  auto c = machine();
  c.system.address_space_limit = 8 * core::kGiB;
  expect_warning(run_check("system.memory", c), {"may map at most 8.00 GiB (the shell's `ulimit -v`)"}, "ulimit -v unlimited");
}

// Docker's default /dev/shm (64 MiB) is too small for NCCL between ranks on one node.
TEST(SystemChecks, DockersDefaultSharedMemoryWarnsWithTheFlagThatRaisesIt) {
  auto c = machine();
  c.system.shm = device::DiskSpace{64 * core::kMiB, 64 * core::kMiB};
  expect_warning(run_check("system.shm", c), {"64.00 MiB total", "NCCL"}, "--shm-size=8g");
  c.system.shm.reset();
  const auto missing = run_check("system.shm", c);
  EXPECT_EQ(missing.status, Status::warn);
  EXPECT_EQ(missing.detail, "/dev/shm is missing");
}

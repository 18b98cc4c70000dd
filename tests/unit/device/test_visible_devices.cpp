#include <gtest/gtest.h>

#include "gputrain/device/visible_devices.hpp"

using namespace gputrain::device;

namespace {
const std::vector<PhysicalGpu> kFour = {
    {0, "GPU-5f1a2b3c-0000-1111-2222-333344445555"},
    {1, "GPU-5f1a9999-0000-1111-2222-333344445555"},
    {2, "GPU-a0b1c2d3-0000-1111-2222-333344445555"},
    {3, "GPU-deadbeef-0000-1111-2222-333344445555"},
};
using Ints = std::vector<int>;
}  // namespace

TEST(CudaVisibleDevices, UnsetShowsEveryGpu) {
  const auto v = parse_cuda_visible_devices(std::nullopt, kFour);
  EXPECT_FALSE(v.restricted);
  EXPECT_EQ(v.physical, (Ints{0, 1, 2, 3}));
  EXPECT_TRUE(v.problems.empty());
}

TEST(CudaVisibleDevices, EmptyStringHidesEveryGpu) {
  for (const char* value : {"", "  "}) {
    const auto v = parse_cuda_visible_devices(std::string(value), kFour);
    EXPECT_TRUE(v.restricted);
    EXPECT_TRUE(v.physical.empty());
    ASSERT_EQ(v.problems.size(), 1u);
  }
}

TEST(CudaVisibleDevices, OrdinalsKeepTheirOrder) {
  EXPECT_EQ(parse_cuda_visible_devices("2,0", kFour).physical, (Ints{2, 0}));
  EXPECT_EQ(parse_cuda_visible_devices(" 3 , 1 ", kFour).physical, (Ints{3, 1}));
}

TEST(CudaVisibleDevices, FullUuidsAndUniquePrefixesWithOrWithoutGpuPrefix) {
  EXPECT_EQ(parse_cuda_visible_devices("GPU-deadbeef-0000-1111-2222-333344445555", kFour).physical, (Ints{3}));
  EXPECT_EQ(parse_cuda_visible_devices("GPU-a0b1", kFour).physical, (Ints{2}));
  EXPECT_EQ(parse_cuda_visible_devices("a0b1c2d3", kFour).physical, (Ints{2}));
  EXPECT_EQ(parse_cuda_visible_devices("gpu-DEADBEEF,0", kFour).physical, (Ints{3, 0}));
}

TEST(CudaVisibleDevices, AnInvalidEntryHidesItAndEverythingAfterIt) {
  const auto v = parse_cuda_visible_devices("1,abc,2", kFour);
  EXPECT_EQ(v.physical, (Ints{1}));
  ASSERT_EQ(v.problems.size(), 1u);
  EXPECT_NE(v.problems[0].find("entry 2"), std::string::npos);
  EXPECT_NE(v.problems[0].find("(2) are hidden"), std::string::npos);
}

TEST(CudaVisibleDevices, OutOfRangeNegativeAmbiguousAndRepeatedEntriesStopTheList) {
  EXPECT_EQ(parse_cuda_visible_devices("0,7,1", kFour).physical, (Ints{0}));
  EXPECT_TRUE(parse_cuda_visible_devices("-1", kFour).physical.empty());
  EXPECT_EQ(parse_cuda_visible_devices("3,GPU-5f1a", kFour).physical, (Ints{3}));  // matches GPUs 0 and 1
  EXPECT_EQ(parse_cuda_visible_devices("1,1,2", kFour).physical, (Ints{1}));
  EXPECT_EQ(parse_cuda_visible_devices("0,,1", kFour).physical, (Ints{0}));
  EXPECT_EQ(parse_cuda_visible_devices("99999999999999", kFour).problems.size(), 1u);
}

TEST(CudaVisibleDevices, MigUuidsAreLeftToTheDriver) {
  const auto v = parse_cuda_visible_devices("MIG-1234abcd-0000-1111-2222-333344445555", kFour);
  EXPECT_TRUE(v.physical.empty());
  EXPECT_EQ(v.mig.size(), 1u);
  EXPECT_TRUE(v.problems.empty());
}

TEST(CudaDeviceOrder, KnownValuesAndAProblemForOthers) {
  EXPECT_EQ(parse_cuda_device_order(std::nullopt).order, DeviceOrder::fastest_first);
  EXPECT_EQ(parse_cuda_device_order(std::string("PCI_BUS_ID")).order, DeviceOrder::pci_bus_id);
  const auto bad = parse_cuda_device_order(std::string("pci_bus_id"));
  EXPECT_EQ(bad.order, DeviceOrder::fastest_first);
  ASSERT_TRUE(bad.problem.has_value());
  EXPECT_NE(bad.problem->find("PCI_BUS_ID"), std::string::npos);
}

TEST(NvidiaVisibleDevices, AllNoneVoidAndLists) {
  using Kind = NvidiaVisibleDevices::Kind;
  EXPECT_EQ(parse_nvidia_visible_devices(std::nullopt).kind, Kind::unset);
  EXPECT_EQ(parse_nvidia_visible_devices(std::string("all")).kind, Kind::all);
  EXPECT_EQ(parse_nvidia_visible_devices(std::string("none")).kind, Kind::none);
  EXPECT_EQ(parse_nvidia_visible_devices(std::string("void")).kind, Kind::void_);
  EXPECT_EQ(parse_nvidia_visible_devices(std::string("")).kind, Kind::void_);
  const auto list = parse_nvidia_visible_devices(std::string("0, GPU-abc"));
  EXPECT_EQ(list.kind, Kind::list);
  EXPECT_EQ(list.entries, (std::vector<std::string>{"0", "GPU-abc"}));
}

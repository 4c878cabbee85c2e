#include "allocator/allocated_state.h"

#include <gtest/gtest.h>

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;

rv1::DeviceRequestAllocationResult Result(const std::string& device) {
  rv1::DeviceRequestAllocationResult r;
  r.request = "req";
  r.driver = "driver";
  r.pool = "pool";
  r.device = device;
  return r;
}

TEST(AllocatedStateTest, AddAllocationCountsAsTheSchedulerDoes) {
  rv1::AllocationResult allocation;
  allocation.devices.results.push_back(Result("exclusive"));
  rv1::DeviceRequestAllocationResult admin = Result("admin");
  admin.admin_access = true;
  allocation.devices.results.push_back(admin);
  rv1::DeviceRequestAllocationResult share = Result("shared");
  share.share_id = "7a1b8f3e-0000-4000-8000-000000000001";
  share.consumed_capacity.emplace("bandwidth", api::Quantity::Parse("1G").value());
  allocation.devices.results.push_back(share);

  AllocatedState state;
  state.AddAllocation(allocation);
  EXPECT_TRUE(state.IsExclusivelyAllocated("driver", "pool", "exclusive"));
  EXPECT_FALSE(state.IsAllocated("driver", "pool", "admin")) << "admin access is not counted";
  EXPECT_FALSE(state.IsExclusivelyAllocated("driver", "pool", "shared"));
  EXPECT_TRUE(state.IsAllocated("driver", "pool", "shared"));
  const AllocatedState::DeviceRecord* record = state.Find("driver", "pool", "shared");
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->aggregated.at("bandwidth"), api::Quantity::Parse("1G").value());
  EXPECT_EQ(state.size(), 2u);

  state.RemoveAllocation(allocation);
  EXPECT_FALSE(state.IsAllocated("driver", "pool", "exclusive"));
  EXPECT_FALSE(state.IsAllocated("driver", "pool", "shared"));
  EXPECT_EQ(state.size(), 0u);
}

TEST(AllocatedStateTest, SharesAggregateCapacity) {
  AllocatedState state;
  AllocatedState::Capacity one{{"bw", api::Quantity::FromInt64(1)}};
  AllocatedState::Capacity two{{"bw", api::Quantity::FromInt64(2)}};
  state.AddConsumedCapacity("d", "p", "nic", one);
  state.AddConsumedCapacity("d", "p", "nic", two);
  EXPECT_EQ(state.Find("d", "p", "nic")->aggregated.at("bw"), api::Quantity::FromInt64(3));
  state.RemoveConsumedCapacity("d", "p", "nic", one);
  EXPECT_EQ(state.Find("d", "p", "nic")->aggregated.at("bw"), api::Quantity::FromInt64(2));
  EXPECT_TRUE(state.IsAllocated("d", "p", "nic"));
  state.RemoveConsumedCapacity("d", "p", "nic", two);
  EXPECT_FALSE(state.IsAllocated("d", "p", "nic"));
}

TEST(AllocatedStateTest, EveryMutationBumpsItsPoolVersion) {
  AllocatedState state;
  const AllocatedState::PoolRecord* pool = state.PoolFor("d", "p");
  uint64_t before = pool->version;
  state.AddDevice("d", "p", "x");
  EXPECT_GT(pool->version, before) << "the record pointer stays valid and sees the change";
  uint64_t other = state.PoolFor("d", "other")->version;
  state.RemoveDevice("d", "p", "x");
  EXPECT_EQ(state.PoolFor("d", "other")->version, other);
}

TEST(AllocatedStateTest, CopiesHaveTheirOwnIdentity) {
  AllocatedState a;
  a.AddDevice("d", "p", "x");
  AllocatedState b = a;
  EXPECT_NE(a.id(), b.id());
  EXPECT_TRUE(b.IsExclusivelyAllocated("d", "p", "x"));
}

}  // namespace
}  // namespace draplane::allocator

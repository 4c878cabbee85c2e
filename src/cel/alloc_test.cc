// Program::Match performs no heap allocation for the common selector shapes once a thread has
// warmed up (the allocator evaluates selectors in its innermost loop). Global operator new is
// replaced in this test binary to count allocations.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "cel/cel.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// GCC flags free() in a replaced operator delete as mismatched with the replaced operator new,
// which calls malloc(): the pair is consistent.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace draplane::cel {
namespace {

TEST(CelAllocationTest, CommonSelectorsDoNotAllocate) {
  DeviceInput::Builder b("gpu.nvidia.com");
  b.AddString("productName", "NVIDIA H100 80GB HBM3")
      .AddInt("index", 3)
      .AddVersion("driverVersion", "550.54.15")
      .AddStrings("models", {"a", "b"})
      .AddCapacity("memory", *api::Quantity::Parse("80Gi"));
  auto device = std::move(b).Build();
  auto env = Environment::NewDra();
  const char* selectors[] = {
      R"(device.driver == "gpu.nvidia.com")",
      R"(device.attributes["gpu.nvidia.com"].productName.contains("H100"))",
      R"(device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA"))",
      R"(device.attributes["gpu.nvidia.com"]["index"] >= 2)",
      R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)",
      R"(device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi")))",
      R"(device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0")))",
      R"(device.attributes["gpu.nvidia.com"].productName.matches("H1[0-9]+"))",
      R"("a" in device.attributes["gpu.nvidia.com"].models)",
      R"(has(device.attributes["gpu.nvidia.com"].index) && "gpu.nvidia.com" in device.attributes)",
      R"(cel.bind(g, device.attributes["gpu.nvidia.com"], g.index > 1 && g.productName != ""))",
      R"(device.attributes["gpu.nvidia.com"].models.exists(m, m == "b"))",
  };
  for (const char* s : selectors) {
    auto p = env->Compile(s);
    ASSERT_TRUE(p.ok()) << s << ": " << p.status().message();
    SelectorResult warm = (*p)->Match(*device);
    ASSERT_FALSE(warm.is_error()) << s << ": " << warm.error();
    ASSERT_TRUE(warm.matches()) << s;
    allocations = 0;
    counting = true;
    for (int i = 0; i < 100; ++i) {
      SelectorResult r = (*p)->Match(*device);
      ASSERT_TRUE(r.matches());
    }
    counting = false;
    EXPECT_EQ(allocations.load(), 0) << s;
  }
}

}  // namespace
}  // namespace draplane::cel

#include "store/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/metrics.h"

namespace draplane::store {
namespace {

using ::testing::HasSubstr;

TEST(OpenStoreTest, BadUrlsAreInvalidArgument) {
  for (std::string_view url :
       {"", "memory", "memory://x", "postgres://db", "sqlite://", "etcd://", "etcd://localhost",
        "etcd://host:port", "etcd://h:1,", "etcd://h:1?color=blue"}) {
    StatusOr<std::unique_ptr<Store>> store = OpenStore(url);
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << url;
  }
}

TEST(OpenStoreTest, EtcdOptionsAreChecked) {
  EXPECT_EQ(OpenStore("etcd://127.0.0.1:1?prefix=nope").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("etcd://127.0.0.1:1?cacert=/nonexistent/ca.pem").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("etcd://127.0.0.1:1?cacert=/dev/null&cert=/nonexistent").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(OpenStoreTest, UnreachableEtcdIsUnavailable) {
  // Port 1 on loopback refuses connections.
  EXPECT_EQ(OpenStore("etcd://127.0.0.1:1").status().code(), StatusCode::kUnavailable);
}

TEST(OpenStoreTest, OperationsAreCountedAndTimedPerBackendResourceAndCode) {
  StatusOr<std::unique_ptr<Store>> store = OpenStore("memory://");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Create(Key{"core/pods", "ns", "a"}, "x").ok());
  EXPECT_FALSE((*store)->Create(Key{"core/pods", "ns", "a"}, "x").ok());
  const std::string text = metrics::RenderText();
  EXPECT_THAT(text, HasSubstr("draplane_store_requests_total{backend=\"memory\",code=\"OK\","
                              "operation=\"create\",resource=\"core/pods\"} 1"));
  EXPECT_THAT(text, HasSubstr("draplane_store_requests_total{backend=\"memory\",code="
                              "\"ALREADY_EXISTS\",operation=\"create\",resource=\"core/pods\"} 1"));
  EXPECT_THAT(text, HasSubstr("draplane_store_request_duration_seconds_count{backend=\"memory\","
                              "operation=\"create\",resource=\"core/pods\"} 2"));
}

}  // namespace
}  // namespace draplane::store

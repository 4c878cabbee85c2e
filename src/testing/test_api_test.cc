// The test hooks of TestApi behave as test_api.h promises.
#include "testing/test_api.h"

#include <gtest/gtest.h>

#include "client/typed.h"

namespace draplane::testing {
namespace {

using api::corev1::Pod;

Pod MakePod(const std::string& name) {
  Pod pod;
  pod.metadata.name = name;
  pod.metadata.namespace_ = "ns";
  api::corev1::Container c;
  c.name = "main";
  c.image = "app:1";
  pod.spec.containers.push_back(c);
  return pod;
}

client::ApiRequest WatchPods(std::string from, bool bookmarks = false) {
  client::ApiRequest request;
  request.resource = &client::ResourceOf<Pod>();
  request.namespace_ = "ns";
  request.list.resource_version = std::move(from);
  request.list.allow_watch_bookmarks = bookmarks;
  return request;
}

TEST(TestApiTest, InterceptorAndRequestCounts) {
  TestApi api({.namespaces = {"ns"}});
  api.SetInterceptor([](const client::ApiRequest& r) -> std::optional<Status> {
    if (r.verb == client::Verb::kCreate) return ConflictError("injected");
    return std::nullopt;
  });
  EXPECT_EQ(client::Create(api, MakePod("p")).status().code(), StatusCode::kConflict);
  EXPECT_EQ(api.RequestCount(client::Verb::kCreate), 0) << "failed before the server";
  api.SetInterceptor(nullptr);
  ASSERT_TRUE(client::Create(api, MakePod("p")).ok());
  EXPECT_EQ(api.RequestCount(client::Verb::kCreate), 1);
  ASSERT_TRUE(client::Get<Pod>(api, "ns", "p").ok());
  EXPECT_EQ(api.RequestCount(client::Verb::kGet), 1);
}

TEST(TestApiTest, WatchesEndBookmarkAndExpire) {
  TestApi api({.namespaces = {"ns"}});
  StatusOr<Pod> created = client::Create(api, MakePod("p"));
  ASSERT_TRUE(created.ok());
  StatusOr<std::unique_ptr<client::WatchStream>> watch =
      api.Watch(WatchPods(created->metadata.resource_version, /*bookmarks=*/true));
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(client::Create(api, MakePod("q")).ok());
  StatusOr<std::optional<client::WatchEvent>> added = (*watch)->Next();
  ASSERT_TRUE(added.ok() && added->has_value());
  EXPECT_EQ((*added)->type, "ADDED");

  api.SendBookmarks();
  api.CloseWatches();
  StatusOr<std::optional<client::WatchEvent>> bookmark = (*watch)->Next();
  ASSERT_TRUE(bookmark.ok() && bookmark->has_value()) << "queued before the end";
  EXPECT_EQ((*bookmark)->type, "BOOKMARK");
  StatusOr<std::optional<client::WatchEvent>> end = (*watch)->Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value()) << "a server-side end, as a watch timeout";

  // After compaction a watch from the first version is too old.
  ASSERT_TRUE(client::Create(api, MakePod("r")).ok());
  api.CompactLog();
  StatusOr<std::unique_ptr<client::WatchStream>> old =
      api.Watch(WatchPods(created->metadata.resource_version));
  // The server answers 410 at once, or (as the watch cache does) with an ERROR event.
  Status expired = old.status();
  if (old.ok()) {
    StatusOr<std::optional<client::WatchEvent>> event = (*old)->Next();
    expired = event.status();
    if (event.ok()) {
      ASSERT_TRUE(event->has_value());
      ASSERT_EQ((*event)->type, "ERROR");
      expired = client::StatusFromWatchError(*(*event)->object);
    }
  }
  EXPECT_EQ(expired.code(), StatusCode::kExpired) << expired.ToString();
  EXPECT_GE(api.resource_version(), std::stoll(created->metadata.resource_version) + 2);
}

}  // namespace
}  // namespace draplane::testing

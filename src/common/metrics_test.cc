#include "common/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace draplane::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CounterCountsPerLabelSet) {
  CounterFamily family =
      NewCounterFamily("draplane_test_requests_total", "Requests seen by the test.", {"verb"});
  family.WithLabels({"get"}).Increment();
  family.WithLabels({"get"}).Increment(2);
  family.WithLabels({"list"}).Increment();
  EXPECT_EQ(family.WithLabels({"get"}).Value(), 3);
  EXPECT_EQ(family.WithLabels({"list"}).Value(), 1);

  const std::string text = RenderText();
  EXPECT_THAT(text, HasSubstr("# HELP draplane_test_requests_total Requests seen by the test."));
  EXPECT_THAT(text, HasSubstr("# TYPE draplane_test_requests_total counter"));
  EXPECT_THAT(text, HasSubstr("draplane_test_requests_total{verb=\"get\"} 3"));
  EXPECT_THAT(text, HasSubstr("draplane_test_requests_total{verb=\"list\"} 1"));
}

TEST(MetricsTest, RegisteringTheSameNameTwiceSharesTheSeries) {
  CounterFamily a = NewCounterFamily("draplane_test_shared_total", "Shared.", {"k"});
  CounterFamily b = NewCounterFamily("draplane_test_shared_total", "Shared.", {"k"});
  a.WithLabels({"x"}).Increment();
  b.WithLabels(std::vector<std::string>{"x"}).Increment();
  EXPECT_EQ(a.WithLabels({"x"}).Value(), 2);
}

TEST(MetricsTest, GaugeGoesUpAndDown) {
  GaugeFamily family = NewGaugeFamily("draplane_test_watchers", "Open watches.", {"resource"});
  Gauge gauge = family.WithLabels({"core/pods"});
  gauge.Set(5);
  gauge.Increment();
  gauge.Decrement(2);
  EXPECT_EQ(gauge.Value(), 4);
  EXPECT_THAT(RenderText(), HasSubstr("draplane_test_watchers{resource=\"core/pods\"} 4"));
}

TEST(MetricsTest, HistogramRendersCumulativeBuckets) {
  HistogramFamily family =
      NewHistogramFamily("draplane_test_latency_seconds", "Latency.", {"op"}, {0.1, 1.0});
  Histogram histogram = family.WithLabels({"create"});
  histogram.Observe(0.05);
  histogram.Observe(0.5);
  histogram.Observe(5);
  const std::string text = RenderText();
  EXPECT_THAT(text, HasSubstr("# TYPE draplane_test_latency_seconds histogram"));
  EXPECT_THAT(text, HasSubstr("draplane_test_latency_seconds_bucket{op=\"create\",le=\"0.1\"} 1"));
  EXPECT_THAT(text, HasSubstr("draplane_test_latency_seconds_bucket{op=\"create\",le=\"1\"} 2"));
  EXPECT_THAT(text, HasSubstr("draplane_test_latency_seconds_bucket{op=\"create\",le=\"+Inf\"} 3"));
  EXPECT_THAT(text, HasSubstr("draplane_test_latency_seconds_count{op=\"create\"} 3"));
}

TEST(MetricsTest, ConcurrentIncrementsAreNotLost) {
  CounterFamily family = NewCounterFamily("draplane_test_concurrent_total", "Concurrent.", {});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) family.WithLabels(std::vector<std::string>{}).Increment();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(family.WithLabels(std::vector<std::string>{}).Value(), 4000);
}

TEST(MetricsTest, ExponentialBucketsMultiply) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(LatencyBuckets().front(), 50e-6);
}

TEST(MetricsDeathTest, SameNameWithDifferentLabelsAborts) {
  NewCounterFamily("draplane_test_shape_total", "Shape.", {"a"});
  EXPECT_DEATH(NewCounterFamily("draplane_test_shape_total", "Shape.", {"b"}), "different shapes");
}

TEST(MetricsDeathTest, InvalidNameAborts) {
  EXPECT_DEATH(NewGaugeFamily("bad name", "Bad.", {}), "bad name");
}

}  // namespace
}  // namespace draplane::metrics

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

// WithLabels remembers series by their label values: tuples whose values concatenate to the
// same text must still be different series, and asking again must return the same series.
TEST(MetricsTest, SeriesAreKeyedByEveryLabelValue) {
  CounterFamily family =
      NewCounterFamily("draplane_test_tuples_total", "Tuples.", {"first", "second"});
  family.WithLabels({"a:b", "c"}).Increment();
  family.WithLabels({"a", "b:c"}).Increment(2);
  family.WithLabels({"1:a", ""}).Increment(3);
  family.WithLabels({"", "1:a"}).Increment(4);
  family.WithLabels(std::vector<std::string>{"a:b", "c"}).Increment(10);
  EXPECT_EQ(family.WithLabels({"a:b", "c"}).Value(), 11);
  EXPECT_EQ(family.WithLabels({"a", "b:c"}).Value(), 2);
  EXPECT_EQ(family.WithLabels({"1:a", ""}).Value(), 3);
  EXPECT_EQ(family.WithLabels({"", "1:a"}).Value(), 4);
  const std::string text = RenderText();
  EXPECT_THAT(text, HasSubstr("draplane_test_tuples_total{first=\"a:b\",second=\"c\"} 11\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_tuples_total{first=\"a\",second=\"b:c\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_tuples_total{first=\"1:a\",second=\"\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_tuples_total{first=\"\",second=\"1:a\"} 4\n"));
}

// Two families with the same label values never share a series, and a family registered twice
// shares its series with the first registration (the remembered series included).
TEST(MetricsTest, RememberedSeriesBelongToTheirFamily) {
  HistogramFamily one = NewHistogramFamily("draplane_test_one_seconds", "One.", {"op"}, {1.0});
  HistogramFamily two = NewHistogramFamily("draplane_test_two_seconds", "Two.", {"op"}, {1.0});
  one.WithLabels({"get"}).Observe(0.5);
  two.WithLabels({"get"}).Observe(2);
  two.WithLabels({"get"}).Observe(3);
  HistogramFamily again = NewHistogramFamily("draplane_test_one_seconds", "One.", {"op"}, {1.0});
  again.WithLabels({"get"}).Observe(0.25);
  const std::string text = RenderText();
  EXPECT_THAT(text, HasSubstr("draplane_test_one_seconds_count{op=\"get\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_one_seconds_bucket{op=\"get\",le=\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_two_seconds_count{op=\"get\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("draplane_test_two_seconds_bucket{op=\"get\",le=\"1\"} 0\n"));
}

// Threads creating the same new series at once end up counting into one series.
TEST(MetricsTest, ConcurrentFirstUseSharesOneSeries) {
  CounterFamily family = NewCounterFamily("draplane_test_race_total", "Race.", {"k"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) family.WithLabels({"k" + std::to_string(i)}).Increment();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(family.WithLabels({"k" + std::to_string(i)}).Value(), 4) << i;
  }
}

TEST(MetricsTest, ExponentialBucketsMultiply) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(LatencyBuckets().front(), 50e-6);
}

// The Prometheus client's process families, as every Kubernetes component exports them.
TEST(MetricsTest, ProcessFamiliesAreExported) {
  const std::string text = RenderText();
  auto value = [&](const std::string& name) {
    size_t at = text.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name;
    return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
  };
  EXPECT_GT(value("process_resident_memory_bytes"), 0);
  EXPECT_GT(value("process_virtual_memory_bytes"), 0);
  EXPECT_GT(value("process_open_fds"), 0);
  EXPECT_GT(value("process_max_fds"), 0);
  EXPECT_GT(value("process_start_time_seconds"), 1.5e9);  // after 2017
  EXPECT_GE(value("process_cpu_seconds_total"), 0);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
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

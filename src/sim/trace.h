// Workload traces: what the simulator submits to the cluster, and when (docs/design/sim.md).
//
// A `WorkloadTrace` (YAML or JSON, written by hand or by `draplane sim record`):
//
//   apiVersion: draplane.dev/v1alpha1
//   kind: WorkloadTrace
//   metadata: {name: week-42}            # optional
//   seed: 42                             # optional; --seed overrides
//   horizon: 24h                         # optional: the measured window (default: the end of the
//                                        # last arrival); the run stops there
//   defaultDuration: 1h                  # run time of arrivals without one, and of Pods a
//                                        # cluster dump holds pending
//   defaultRemaining: 1h                 # how much longer running Pods of a dump run
//   running: [{namespace, name, remaining}]   # per running Pod of the dump
//   tenants: [{namespace, weight}]       # fair-share weights (default 1)
//   claimTemplates: []                   # ResourceClaimTemplate manifests, created first
//   claims: []                           # ResourceClaim manifests (shared claims), created first
//   policies: []                         # any other objects (quotas, sharing policy, ...)
//   arrivals:
//   - at: 0s                             # virtual time of the first copy
//     namespace: team-a
//     count: 10                          # default 1
//     interval: 30s                      # between copies, default 0
//     duration: 1h                       # run time once bound (then the Pod completes)
//     deleteAfter: 2h                    # optional: deleted this long after it arrived unless
//                                        # it completed first (a user giving up)
//     pod: {...}                         # a Pod manifest; metadata.generateName, or name (a
//                                        # count above 1 appends -<i>)
//   generators:
//   - namespace: team-b
//     ratePerMinute: 2                   # Poisson arrivals
//     start: 0s                          # default 0
//     for: 24h
//     duration: {median: 30m, sigma: 1.0}   # log-normal; or a fixed duration such as 30m
//     deleteAfter: 2h                    # optional
//     pod: {...}                         # name gets -<i> (the generator's i-th Pod)
//
// Times are Go durations (`90s`, `1m30s`, `2h`) and are kept at millisecond resolution. Pods get
// the API server's defaults (api/validation/pod_defaults.h); claims and templates are defaulted
// when the simulator creates them.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/meta/duration.h"
#include "common/clock.h"
#include "common/random.h"
#include "common/status.h"

namespace draplane::sim {

inline constexpr std::string_view kApiVersion = "draplane.dev/v1alpha1";
inline constexpr std::string_view kTraceKind = "WorkloadTrace";

// A Pod's run time: fixed, or drawn from a log-normal distribution.
struct DurationSpec {
  Duration fixed{0};
  bool log_normal = false;
  Duration median{0};
  double sigma = 0;
};

struct Arrival {
  std::string path;  // "arrivals[2]", for messages
  Duration at{0};
  std::string namespace_;
  int64_t count = 1;
  Duration interval{0};
  std::optional<Duration> duration;
  std::optional<Duration> delete_after;
  boost::json::object pod;  // defaulted manifest, namespace set
};

struct Generator {
  std::string path;
  std::string namespace_;
  double rate_per_minute = 0;
  Duration start{0};
  Duration length{0};  // `for`
  std::optional<DurationSpec> duration;
  std::optional<Duration> delete_after;
  boost::json::object pod;
};

struct RunningPod {
  std::string namespace_;
  std::string name;
  Duration remaining{0};
};

struct Tenant {
  std::string namespace_;
  double weight = 1;
};

struct Trace {
  std::string source;  // the file it was read from (ParseTrace's `source`), for messages
  std::string name;
  std::optional<uint64_t> seed;
  std::optional<Duration> horizon;
  Duration default_duration = std::chrono::hours(1);
  Duration default_remaining = std::chrono::hours(1);
  std::vector<RunningPod> running;
  std::vector<Tenant> tenants;
  std::vector<boost::json::object> claim_templates;
  std::vector<boost::json::object> claims;
  std::vector<boost::json::object> policies;
  std::vector<Arrival> arrivals;
  std::vector<Generator> generators;
};

// The fields of a Kubernetes object (with apiVersion and kind) that its kind does not have, as
// paths ("spec.nodeSelectr"): the API server's strict field validation, which kubectl asks for by
// default and the simulator's in-memory API does not do. Supplied by a caller that has the
// schemas (the CLI: server/openapi); unset, nothing is checked.
using UnknownFieldCheck = std::function<std::vector<std::string>(const boost::json::object&)>;

struct ParseOptions {
  UnknownFieldCheck unknown_fields{};
};

// Parses a trace; `source` prefixes messages (a file name). InvalidArgument naming the field
// (`arrivals[1].duration: time: unknown unit "x" in duration "1x"`, Go's wording) for anything
// malformed, including Pods, templates and claims that do not decode as their kind, fail the API
// server's validation, or (with `options.unknown_fields`) carry fields their kind does not have.
StatusOr<Trace> ParseTrace(std::string_view text, std::string_view source = "",
                           const ParseOptions& options = {});
// Reads and parses a trace file; NotFound when it cannot be read.
StatusOr<Trace> LoadTrace(const std::string& path, const ParseOptions& options = {});

// The most Pods a trace may submit (ExpandTrace refuses more, before expanding).
inline constexpr int64_t kMaxTracePods = 10'000'000;

// One Pod to submit.
struct PodArrival {
  Duration at{0};  // virtual time since the start of the run
  std::string namespace_;
  std::string name;  // empty when the API generates it
  // The trace's manifest for this arrival or generator, shared by all its copies: a day's trace
  // has ~10^5 Pods, whose manifests built up front held most of a run's memory. Manifest()
  // builds the one to create.
  std::shared_ptr<const boost::json::object> manifest;
  Duration duration{0};  // run time once bound
  std::optional<Duration> delete_after;
  std::string source;  // "arrivals[0]", "generators[1]"

  // The manifest to create: the shared one with `name` set in place of any generateName when
  // the copy has a name.
  boost::json::object Manifest() const;
  // Manifest() decoded, from `decoded`, the shared manifest decoded (the simulator decodes it
  // once, after the priority admission, which leaves the metadata alone): a copy whose metadata
  // is this copy's, decoded alone (a member decodes as it does inside the Pod).
  StatusOr<api::corev1::Pod> Named(const api::corev1::Pod& decoded) const;
  // Manifest()'s metadata.
  boost::json::object Metadata() const;
};

// The Pods of a trace, ordered by time, then by their place in the trace (arrivals before
// generators, each in file order). Generator `g` draws from its own stream seeded from `seed`
// and `g`, so adding a generator leaves the others' Pods unchanged. InvalidArgument when two Pods
// would get the same name in one namespace. With `until`, Pods arriving after it are left out
// (a run stopped there never submits them), and kMaxTracePods counts only the Pods up to it; the
// Pods before it are the same as without it.
StatusOr<std::vector<PodArrival>> ExpandTrace(const Trace& trace, uint64_t seed,
                                              std::optional<Duration> until = std::nullopt);

// The end of the last arrival window: the last copy of every arrival and the end of every
// generator's `for`.
Duration ArrivalsEnd(const Trace& trace);

// Renders a trace as YAML (what `draplane sim record` writes); ParseTrace reads it back.
std::string TraceToYaml(const Trace& trace);

// Durations are written as api::FormatDuration renders them ("1h30m", "250ms", "0s").
using api::FormatDuration;

// Virtual time zero as a wall-clock reading (2026-01-01T00:00:00Z): the simulated API stamps
// creation times from here.
Timestamp StartTime();

// A stream seed derived from a run seed and a purpose, so that independent consumers (the API's
// uids, the scheduler's share IDs, each generator) draw from unrelated streams.
uint64_t DeriveSeed(uint64_t seed, uint64_t purpose);

}  // namespace draplane::sim

#!/usr/bin/env bash
# The simulator's example (examples/sim) through the CLI (issue 21):
#   1. determinism: two runs with the same seed print byte-identical JSON (wallSeconds and
#      decisionsPerWallSecond, which measure the machine, left out); another seed differs;
#   2. conservation holds in every run (the report says so, and the exit code is 0);
#   3. the HTML report is one self-contained page: inline SVG, no script, no external reference;
#   4. `sim compare` of the two policies and the MIG conversion prints every metric with a delta
#      and a 95 % interval;
#   5. bad input fails with exit code 2 and names the file, the field and the reason;
#   6. a ResourceQuota in the default mode (policy-quota.yaml) refuses claims at creation: Pods
#      wait as ClaimNotCreated with the API's "exceeded quota" message.
#
# The runs stop early (--until): the whole eight hours take minutes per run in a sanitizer build
# (docs/design/sim.md, "Performance"); what is checked does not need them.
#
# Usage: sim_example_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"
ex="$SRC/examples/sim"

run_json() {
  "$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" \
    --policy "$ex/policy-fallback.yaml" --until 90m -o json "$@"
}
without_wall() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("wallSeconds"); r.pop("decisionsPerWallSecond"); print(json.dumps(r, sort_keys=True))' "$1"
}

step "same seed, same report; another seed, another report"
run_json --seed 7 --html "$e2e_work/report.html" >"$e2e_work/a.json"
run_json --seed 7 >"$e2e_work/b.json"
run_json --seed 8 >"$e2e_work/c.json"
[ "$(without_wall "$e2e_work/a.json")" = "$(without_wall "$e2e_work/b.json")" ] ||
  fail "two runs with seed 7 differ: $(diff <(without_wall "$e2e_work/a.json") <(without_wall "$e2e_work/b.json") | head -5)"
[ "$(without_wall "$e2e_work/a.json")" != "$(without_wall "$e2e_work/c.json")" ] ||
  fail "seeds 7 and 8 gave the same report"

step "conservation, and the report's fields"
python3 - "$e2e_work/a.json" <<'EOF' || fail "report check failed"
import json, sys
r = json.load(open(sys.argv[1]))
for key in ["pods", "waitSeconds", "fallback", "utilization", "fragmentation", "tenants",
            "jainIndex", "decisions", "wallSeconds"]:
    assert key in r, key
assert r["conservation"]["ok"], r["conservation"]
p = r["pods"]
assert p["submitted"] == p["scheduled"] + p["unscheduled"], p
assert p["submitted"] > 150, p
# too-big (16 H100s on one node) arrived at 1h: pending at the end, saying why.
assert r["tenants"]["team-research"]["unscheduledReasons"].get("Unschedulable", 0) >= 1, r["tenants"]
assert any(u["reason"] == "Unschedulable" and "0/16 nodes are available" in u["message"]
           for u in r["unscheduledReasons"]), r["unscheduledReasons"]
assert r["fallback"]["requests"] > 0 and 0 < r["fallback"]["rate"] < 1, r["fallback"]
assert 0 < r["utilization"]["overall"] <= 1, r["utilization"]
assert 0 < r["jainIndex"] <= 1
shares = sum(t["share"] for t in r["tenants"].values())
assert abs(shares - 1) < 1e-5, shares
print("ok:", p, "utilization", r["utilization"]["overall"], "decisions", r["decisions"])
EOF

step "a default-mode quota refuses team-research's claims when they are made"
run_json --seed 7 --policy "$ex/policy-quota.yaml" >"$e2e_work/quota.json"
python3 - "$e2e_work/a.json" "$e2e_work/quota.json" <<'EOF' || fail "quota check failed"
import json, sys
free, quota = (json.load(open(path)) for path in sys.argv[1:])
assert quota["conservation"]["ok"], quota["conservation"]
research = quota["tenants"]["team-research"]
assert research["unscheduledReasons"].get("ClaimNotCreated", 0) >= 1, research
assert research["scheduled"] < free["tenants"]["team-research"]["scheduled"], (research, free)
assert any(u["reason"] == "ClaimNotCreated" and
           "is forbidden: exceeded quota: gpus, requested: "
           "gpu.nvidia.com.deviceclass.resource.k8s.io/devices=2, used: "
           "gpu.nvidia.com.deviceclass.resource.k8s.io/devices=8" in u["message"]
           for u in quota["unscheduledReasons"]), quota["unscheduledReasons"]
print("ok: team-research", research["scheduled"], "scheduled with the quota,",
      free["tenants"]["team-research"]["scheduled"], "without")
EOF

step "the HTML report is self-contained"
html=$(cat "$e2e_work/report.html")
expect_contains "$html" "<svg" "report.html"
expect_contains "$html" "Per-tenant share" "report.html"
expect_not_contains "$html" "<script" "report.html"
expect_not_contains "$html" "src=" "report.html"
expect_not_contains "$html" "href=" "report.html"

step "sim compare: two policies, then the MIG conversion"
"$DRAPLANE" sim compare --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" --seeds 2 \
  --until 1h --a "$ex/policy-h100-only.yaml" --a-name h100-only \
  --b "$ex/policy-fallback.yaml" --b-name fallback >"$e2e_work/compare.txt"
cat "$e2e_work/compare.txt"
out=$(cat "$e2e_work/compare.txt")
expect_contains "$out" "utilization.overall" "compare"
expect_contains "$out" "fallback.rate" "compare"
expect_contains "$out" "tenants.team-llm.share" "compare"
"$DRAPLANE" sim compare --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" --seeds 2 \
  --until 1h --policy "$ex/policy-fallback.yaml" --b "$ex/change-a100-to-mig.yaml" -o json \
  >"$e2e_work/compare.json"
python3 - "$e2e_work/compare.json" <<'EOF' || fail "compare JSON check failed"
import json, sys
c = json.load(open(sys.argv[1]))
metrics = {m["metric"]: m for m in c["metrics"]}
assert "ci95" in metrics["utilization.overall"], metrics["utilization.overall"]
assert metrics["fallback.rate"]["b"] > 0
assert not c["failures"], c["failures"]
print("ok: utilization", metrics["utilization.overall"])
EOF
# The runs are independent: one at a time gives the comparison the default (one per core) gave
# (CompareTest checks more job counts without the process).
"$DRAPLANE" sim compare --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" --seeds 2 \
  --until 1h --policy "$ex/policy-fallback.yaml" --b "$ex/change-a100-to-mig.yaml" -o json \
  --jobs 1 >"$e2e_work/compare-jobs-1.json"
python3 - "$e2e_work/compare.json" "$e2e_work/compare-jobs-1.json" <<'EOF' ||
import json, sys
runs = [json.load(open(path)) for path in sys.argv[1:]]
for r in runs:
    del r["wallSeconds"]
assert runs[0] == runs[1], "the comparison depends on --jobs"
print("ok: the same comparison with --jobs 1 and one per core")
EOF
  fail "compare --jobs check failed"
set +e
err=$("$DRAPLANE" sim compare --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" --jobs -1 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "--jobs -1: exit code $code, want 2"
expect_contains "$err" "--jobs must be at least 1" "--jobs -1"
# Nothing to compare: both sides would be the same configuration.
set +e
err=$("$DRAPLANE" sim compare --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" \
  --policy "$ex/policy-fallback.yaml" 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "compare without --a and --b: exit code $code, want 2"
expect_contains "$err" "give the configurations to compare: --a FILE... and/or --b FILE..." "no --a, --b"

step "bad input: exit code 2, the file, the field, the reason"
cat >"$e2e_work/bad.yaml" <<'EOF'
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
arrivals:
- at: soon
  namespace: team-a
  pod: {metadata: {name: p}}
EOF
set +e
err=$("$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$e2e_work/bad.yaml" 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "bad trace: exit code $code, want 2"
expect_contains "$err" "bad.yaml: arrivals[0].at: time: invalid duration \"soon\"" "error"
cat >"$e2e_work/policy.yaml" <<'EOF'
apiVersion: scheduling.example.com/v1
kind: MadeUpPolicy
metadata: {name: x}
EOF
set +e
err=$("$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" \
  --policy "$e2e_work/policy.yaml" 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "unknown policy kind: exit code $code, want 2"
expect_contains "$err" "MadeUpPolicy (scheduling.example.com/v1) is not a kind the simulated API serves" "error"
# Flags are read as given or refused: no seed is silently another, no run measures nothing.
for args in "--seed -1|--seed: must be a whole number" \
  "--seed 18446744073709551616|--seed: must be a whole number" "--until 0s|--until: must be positive" \
  "--placements|--placements adds every Pod's placement to the JSON report: use it with -o json"; do
  set +e
  # shellcheck disable=SC2086
  err=$("$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" ${args%%|*} 2>&1)
  code=$?
  set -e
  [ $code -eq 2 ] || fail "${args%%|*}: exit code $code, want 2"
  expect_contains "$err" "${args#*|}" "${args%%|*}"
done
# A DeviceClass whose selector does not compile is refused as the API server refuses it.
cat >"$e2e_work/class.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors:
  - cel: {expression: 'device.driver =='}
EOF
set +e
err=$("$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$ex/trace.yaml" \
  --policy "$e2e_work/class.yaml" 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "a selector that does not compile: exit code $code, want 2"
expect_contains "$err" "DeviceClass//broken: spec.selectors[0].cel.expression" "error"
expect_contains "$err" "class.yaml:1: DeviceClass//broken" "the error names where the object was written"
expect_contains "$err" "compilation failed" "error"
# A misspelled field of a hand-written Pod is refused, as kubectl's strict field validation does.
cat >"$e2e_work/typo.yaml" <<'EOF'
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
arrivals:
- at: 0s
  namespace: team-a
  pod:
    metadata: {name: p}
    spec:
      nodeSelectr: {pool: a100}
      containers: [{name: c, image: x}]
EOF
set +e
err=$("$DRAPLANE" sim run --cluster "$ex/cluster.yaml" --workload "$e2e_work/typo.yaml" 2>&1)
code=$?
set -e
[ $code -eq 2 ] || fail "a misspelled Pod field: exit code $code, want 2"
expect_contains "$err" "typo.yaml: arrivals[0].pod: unknown field \"spec.nodeSelectr\"" "error"
echo "PASS"

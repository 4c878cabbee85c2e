#!/usr/bin/env bash
# `make bench`, issue 4 (a)-(d): runs bench/micro/allocator_bench and compares with the targets:
# (a) >= 50,000 allocations/s filling 500 nodes x 10 devices trying nodes in order, (c) >= 10,000/s
# with two-device matchAttribute claims, (d) every pathological backtracking case < 10 ms; (b) the CEL-selector fill is reported.
# Rates are per CPU second (the machine is shared; wall time includes other jobs).
# Usage: allocator_targets.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
bench="$build/bench/allocator_bench"
if [ ! -x "$bench" ]; then
  echo "allocator_targets: $bench not built; skipping" >&2
  exit 0
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bench" --benchmark_filter='FillCluster|Pathological' --benchmark_format=json > "$out"
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for b in data["benchmarks"]:
    name = b["name"]
    if name.startswith("BM_FillCluster"):
        rate = b["allocs_per_s"]
        # Issue 4 sets targets for (a) plain and (c) match_pair; (b) cel_selector is reported only.
        target = {"plain": 50000, "match_pair": 10000}.get(name.split("/")[1])
        verdict = "no target" if target is None else (
            "target >= %d: %s" % (target, "ok" if rate >= target else "SHORT"))
        print("%-45s %9.0f allocations/s (CPU), %5.1f ns per node tried  %s" % (
            name, rate, b["s_per_node_try"] * 1e9, verdict))
    elif name.startswith("BM_Pathological") and "upstream_walk" not in name:
        unit = {"us": 1e-3, "ms": 1.0, "ns": 1e-6}[b["time_unit"]]
        ms = b["real_time"] * unit
        ok = ms < 10
        print("%-45s %9.3f ms wall (%s)  target < 10 ms: %s" % (
            name, ms, b.get("label", ""), "ok" if ok else "SHORT"))
# A missed target is printed (SHORT), not an error: bench/run_all.sh lists them at the end.
PY

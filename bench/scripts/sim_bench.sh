#!/usr/bin/env bash
# `make bench`: the simulator's speed (issue 21; docs/design/sim.md, "Performance"). Replays the
# 100,000-Pod virtual day of bench/sim/trace-100k-day.yaml on the 500-node x 10-GPU cluster of
# bench/sim/cluster-500x10.yaml with `draplane sim run` and reports wall seconds (target: under
# 30 s) and scheduling decisions per wall second (target: at least 20,000; a decision is one
# scheduling attempt of one Pod), with the virtual time simulated per wall second as the ratio
# against real time. First the day's first virtual hour (always finishes: decisions per second on
# the full-size cluster), then the whole day under a wall-time guard (DRAPLANE_SIM_BENCH_GUARD
# seconds, default 600): a day that does not finish within it is reported as MISSED with the
# guard, never left running.
# Usage: sim_bench.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: sim_bench.sh BUILD_DIR}
draplane="$build/src/bin/draplane"
[ -x "$draplane" ] || { echo "sim_bench: $draplane not built" >&2; exit 1; }
guard=${DRAPLANE_SIM_BENCH_GUARD:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sim=("$draplane" sim run --cluster bench/sim/cluster-500x10.yaml
  --workload bench/sim/trace-100k-day.yaml -o json)
summary() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["conservation"]["ok"], r["conservation"]
p = r["pods"]
print(f"sim {sys.argv[2]}: {p['submitted']} pods ({p['scheduled']} scheduled, {p['unscheduled']} "
      f"unscheduled) on {r['nodes']} nodes / {r['offeredDevices']:.0f} devices over "
      f"{r['windowSeconds']/3600:.0f} virtual hours; utilization {r['utilization']['overall']:.3f}, "
      f"fallback rate {r['fallback']['rate']:.3f}, {r['apiWrites']} API writes")
print(f"sim {sys.argv[2]}: {r['wallSeconds']:.2f} s wall; {r['decisions']} decisions "
      f"({r['attempts']['scheduled']} bound, {r['attempts']['unschedulable']} unschedulable, "
      f"{r['attempts']['error']} errors) = {r['decisionsPerWallSecond']:.0f} decisions/s; "
      f"{p['submitted']/r['wallSeconds']:.0f} pods/s; "
      f"{r['virtualSeconds']/r['wallSeconds']:.0f}x real time")
if sys.argv[2] == "day":
    print("sim: wall under 30 s: " + ("met" if r["wallSeconds"] < 30 else "MISSED"))
    print("sim: 20,000 decisions/s: " + ("met" if r["decisionsPerWallSecond"] >= 20000 else "MISSED"))
PY
}
"${sim[@]}" --until 1h >"$work/hour.json"
summary "$work/hour.json" "first hour"
set +e
timeout "$guard" "${sim[@]}" >"$work/day.json"
code=$?
set -e
if [ $code -eq 124 ]; then
  echo "sim: wall under 30 s: MISSED (the day did not finish within the ${guard} s guard)"
  echo "sim: 20,000 decisions/s: MISSED (see the first hour's figure)"
  exit 0
fi
[ $code -eq 0 ] || { echo "sim_bench: sim run exited $code" >&2; exit 1; }
summary "$work/day.json" day

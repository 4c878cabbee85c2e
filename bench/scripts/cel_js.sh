#!/usr/bin/env bash
# `make bench`: CEL selector evaluation and compile time, draplane vs the JavaScript peer
# @marcbachmann/cel-js, measured in the same run on the same expressions and device.
# Prints a table with the ratio and checks the targets of issue 3 (three-clause selector
# <= 40 ns and >= 10x faster than cel-js).
# Usage: cel_js.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
bench="$build/bench/cel_bench"
if [ ! -x "$bench" ]; then
  echo "cel_js: $bench not built; skipping" >&2
  exit 0
fi

js=bench/js
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "cel_js: node/npm not available; peer comparison skipped" >&2
  exit 0
fi
if [ ! -d "$js/node_modules/@marcbachmann/cel-js" ]; then
  if ! (cd "$js" && npm ci --no-audit --no-fund --silent); then
    echo "cel_js: npm install failed (offline?); peer comparison skipped" >&2
    exit 0
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# CPU time, minimum over repetitions: the least load-sensitive figures on a shared machine.
"$bench" --benchmark_filter='BM_CelEval|BM_CelCompile' --benchmark_min_time=0.3 \
  --benchmark_repetitions=5 --benchmark_format=json >"$work/cpp.json" 2>/dev/null
node "$js/cel_js_bench.mjs" >"$work/js.jsonl"

python3 - "$work/cpp.json" "$work/js.jsonl" <<'PY'
import json, sys
cpp = json.load(open(sys.argv[1]))
best = {}
for b in cpp["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    kind, name = b["run_name"].split("/")[0], b["run_name"].split("/")[1]
    key = (kind, name)
    best[key] = min(best.get(key, float("inf")), b["cpu_time"])
js = {}
for line in open(sys.argv[2]):
    line = line.strip()
    if line:
        r = json.loads(line)
        js[r["name"]] = r
print("CEL selectors: draplane vs @marcbachmann/cel-js (CPU time per call, best of 5)")
print(f"{'selector':<15}{'draplane ns':>13}{'cel-js ns':>12}{'ratio':>9}"
      f"{'compile us':>13}{'cel-js us':>12}")
names = [n for (k, n) in best if k == "BM_CelEval"]
for name in names:
    ours = best[("BM_CelEval", name)]
    comp = best.get(("BM_CelCompile", name), float("nan")) / 1000
    peer = js.get(name, {})
    if "eval_ns" in peer:
        print(f"{name:<15}{ours:>13.1f}{peer['eval_ns']:>12.1f}{peer['eval_ns'] / ours:>8.1f}x"
              f"{comp:>13.2f}{peer['compile_ns'] / 1000:>12.2f}")
    else:
        print(f"{name:<15}{ours:>13.1f}{'n/a':>12}{'':>9}{comp:>13.2f}{'':>12}  "
              f"({peer.get('error', 'not run')})")
three = best[("BM_CelEval", "three_clause")]
ratio = js.get("three_clause", {}).get("eval_ns", 0) / three
print(f"target three_clause <= 40 ns: {three:.1f} ns {'OK' if three <= 40 else 'MISSED'}")
print(f"target three_clause >= 10x cel-js: {ratio:.1f}x {'OK' if ratio >= 10 else 'MISSED'}")
PY

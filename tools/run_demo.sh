#!/usr/bin/env bash
# `make run`: the main job on its embedded defaults.
# Usage: run_demo.sh DRAPLANE_BINARY [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
draplane=$1
shift
echo "== draplane lint examples/"
"$draplane" lint examples/
echo "== draplane convert -o yaml examples/ (first 40 lines)"
"$draplane" convert -o yaml examples/ | head -n 40

#!/usr/bin/env bash
# `draplane convert` on a garbage-in case of the lint corpus (one whose expectation is a parse
# error: `# expect: DOC: line ...`): convert must exit 1 and print that error, naming the file and
# document, as its first line on standard error -- never crash, never print a bare parser message.
#
# Usage: run_convert_case.sh DRAPLANE CASE [WORKDIR]   (CASE: NAME.yaml or a NAME.py generator)
set -euo pipefail
draplane=$1
case_file=$2
workdir=${3:-${TMPDIR:-/tmp}}

mkdir -p "$workdir"
input=$case_file
if [[ $case_file == *.py ]]; then
  input="$workdir/$(basename "${case_file%.py}").convert.yaml"
  python3 "$case_file" > "$input"
fi
expected=$(sed -n 's/^# expect: //p' "$case_file" | head -n 1)
set +e
"$draplane" convert -o json "$input" > /dev/null 2> "$workdir/$(basename "$input").err"
code=$?
set -e
actual=$(head -n 1 "$workdir/$(basename "$input").err")
actual=${actual#"$input:"}
status=0
if [[ $code -ne 1 ]]; then
  echo "FAIL $case_file: convert exit code $code, want 1"
  status=1
fi
if [[ "$actual" != "$expected" ]]; then
  echo "FAIL $case_file: convert printed"
  echo "  $actual"
  echo "want"
  echo "  $expected"
  status=1
fi
exit $status

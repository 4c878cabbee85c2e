#!/usr/bin/env bash
# One case of the lint corpus: runs the real `draplane lint` on CASE and compares its output
# with the case's expectations.
#
# Usage: run_case.sh DRAPLANE CASE [WORKDIR]
#
# A case is a manifest (tests/lint/invalid/NAME.yaml) whose `# expect: DOC: KIND/NAME: PATH: REASON`
# comment lines list, in order, the problems lint must print (each printed line is
# `CASE:DOC: ...`; the `CASE:` prefix is stripped before comparing). A sibling NAME.old.yaml is
# passed as `--old`, so the case is validated as an update of those objects. A case may instead
# be a generator (NAME.py) whose expectations sit in its own `# expect:` comments and which writes
# the manifest to standard output (for inputs too large to keep in git); it runs in WORKDIR.
# Cases with expectations must make lint exit 1; a case with none must exit 0 and print nothing.
# A `# flags: ...` line adds command-line flags (e.g. --kubernetes-version 1.37).
set -euo pipefail
draplane=$1
case_file=$2
workdir=${3:-${TMPDIR:-/tmp}}

input=$case_file
if [[ $case_file == *.py ]]; then
  mkdir -p "$workdir"
  input="$workdir/$(basename "${case_file%.py}").yaml"
  python3 "$case_file" > "$input"
fi

args=()
old=${case_file%.yaml}.old.yaml
if [[ $case_file == *.yaml && -f $old ]]; then
  args+=(--old "$old")
fi

read -r -a flags <<< "$(sed -n 's/^# flags: //p' "$case_file")"
args+=("${flags[@]}")

expected=$(sed -n 's/^# expect: //p' "$case_file")
set +e
actual=$("$draplane" lint "${args[@]}" "$input" 2>/dev/null)
code=$?
set -e
actual=${actual//"$input:"/}

want_code=1
[[ -z $expected ]] && want_code=0
status=0
if [[ $code -ne $want_code ]]; then
  echo "FAIL $case_file: exit code $code, want $want_code"
  status=1
fi
if [[ "$actual" != "$expected" ]]; then
  echo "FAIL $case_file: output differs (- expected, + actual):"
  diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") || true
  status=1
fi
exit $status

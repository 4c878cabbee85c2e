#!/usr/bin/env bash
# Every command that takes an object reference rejects an empty or malformed one as a usage error
# (exit 2, a message naming the argument) before it reads anything: `explain pod team-a/` used to
# look up a Pod with an empty name and report on it. An unreadable kubeconfig is exit 2 as well.
# Usage: object_refs_test.sh DRAPLANE
set -uo pipefail
draplane=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# usage NAME WANT_STDERR_SUBSTRING -- ARGS...
usage() {
  local name=$1 want=$2
  shift 3
  local err rc
  err=$("$draplane" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" != 2 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL $name: exit $rc (want 2), stderr: $err (want: $want)"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

# A kubeconfig that must never be reached: a bad reference fails first.
kubeconfig="$work/unreachable.kubeconfig"
cat >"$kubeconfig" <<'YAML'
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team-a}}]
current-context: c
YAML

usage explain-empty-name "the name after '/' is empty" -- \
  explain pod team-a/ --kubeconfig "$kubeconfig"
usage explain-empty-namespace "the namespace before '/' is empty" -- \
  explain pod /llm-5 --kubeconfig "$kubeconfig"
usage explain-two-slashes "expected NAMESPACE/NAME or NAME" -- \
  explain pod a/b/c --kubeconfig "$kubeconfig"
usage explain-claim-empty-name "the name after '/' is empty" -- \
  explain claim team-a/ --kubeconfig "$kubeconfig"
usage explain-claim-two-slashes "expected NAMESPACE/NAME or NAME" -- \
  explain claim a/b/c --kubeconfig "$kubeconfig"
usage explain-empty "name must not be empty" -- explain pod "" --kubeconfig "$kubeconfig"
usage explain-bad-name "RFC 1123 subdomain" -- explain pod team-a/Bad_Name --kubeconfig "$kubeconfig"
usage allocate-node "--node" -- allocate --cluster "$work" --claim "$work" --node ""
usage allocate-node-invalid "RFC 1123 subdomain" -- allocate --cluster "$work" --claim "$work" --node "Node_1"
usage allocate-namespace "must not contain dots" -- allocate --cluster "$work" --claim "$work" -n "team.a"
usage lint-namespace "namespace must not be empty" -- lint "$work" -n ""
usage agent-node "RFC 1123 subdomain" -- agent --node "gpu node" --dry-run
usage scheduler-lease-namespace "RFC 1123 label" -- \
  scheduler --kubeconfig "$kubeconfig" --leader-elect-namespace "Kube_System"
usage controller-manager-lease-name "RFC 1123 subdomain" -- \
  controller-manager --kubeconfig "$kubeconfig" --leader-elect-lease-name "a/b"
usage kubeconfig-namespace "RFC 1123 label" -- kubeconfig --user alice --namespace "team/a"

# A kubeconfig that cannot be read is an environment error (exit 2) for every command that reads
# one; `explain` exits 1 only when the object it explains does not exist (as `kubectl get`).
missing="$work/missing.kubeconfig"
usage explain-missing-kubeconfig "cannot read $missing" -- explain pod team-a/llm-5 --kubeconfig "$missing"
usage explain-claim-missing-kubeconfig "cannot read $missing" -- \
  explain claim team-a/llm-5 --kubeconfig "$missing"
usage pools-missing-kubeconfig "cannot read $missing" -- pools --kubeconfig "$missing"
usage queue-missing-kubeconfig "cannot read $missing" -- queue --kubeconfig "$missing"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi

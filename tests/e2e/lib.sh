# Shared helpers of the end-to-end scripts (sourced). They start the real `draplane serve` on a
# free loopback port with a temporary data directory, and stop exactly the process they started.
#
# After `start_server [flags...]`: $server_pid, $server_url, $admin_kubeconfig are set and the
# server accepts requests (its `ready:` line was read). `stop_server` ends it with SIGTERM and
# waits; `kill_server` sends SIGKILL.

e2e_work=$(mktemp -d "${TMPDIR:-/tmp}/draplane-e2e.XXXXXX")
server_pid=""
server_url=""
admin_kubeconfig=""
background_pids=()
export HOME="$e2e_work/home"
export KUBECACHEDIR="$e2e_work/kubecache"
mkdir -p "$HOME"

e2e_cleanup() {
  local pid
  for pid in "${background_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$e2e_work"
}
trap e2e_cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$e2e_work/server.log" ]; then
    echo "--- server log (last 40 lines)" >&2
    tail -n 40 "$e2e_work/server.log" >&2
  fi
  exit 1
}

step() { echo "== $*"; }

# start_server DATA_DIR [serve flags...]
start_server() {
  local data_dir=$1
  shift
  local fifo="$e2e_work/ready.$RANDOM.fifo"
  mkfifo "$fifo"
  # The API alone: serve's embedded scheduler and claim controllers would act on these objects.
  "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$data_dir" --no-scheduler \
    --no-controller-manager "$@" >"$fifo" 2>>"$e2e_work/server.log" &
  server_pid=$!
  # Keep the read end open for the server's life (it never writes more than the ready line).
  exec {server_out}<"$fifo"
  local line=""
  if ! read -r -t 120 -u "$server_out" line; then
    fail "draplane serve did not print its ready line"
  fi
  case "$line" in
    ready:*) ;;
    *) fail "unexpected first line from draplane serve: $line" ;;
  esac
  server_url=$(echo "$line" | sed -E 's/^ready: ([^ ]+) .*/\1/')
  admin_kubeconfig=${line##*kubeconfig=}
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "draplane serve exited with an error on SIGTERM"
  server_pid=""
}

kill_server() {
  kill -KILL "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# expect_contains TEXT NEEDLE [WHAT]
expect_contains() {
  if ! grep -qF -- "$2" <<<"$1"; then
    fail "${3:-output} does not contain \"$2\":"$'\n'"$1"
  fi
}

expect_not_contains() {
  if grep -qF -- "$2" <<<"$1"; then
    fail "${3:-output} contains \"$2\":"$'\n'"$1"
  fi
}

# wait_for_file_line FILE PATTERN SECONDS: polls until FILE has a line matching PATTERN.
wait_for_file_line() {
  local deadline=$((SECONDS + $3))
  while ! grep -qE -- "$2" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "no line matching \"$2\" in $1 after $3 s:"$'\n'"$(cat "$1")"
    sleep 0.1
  done
}

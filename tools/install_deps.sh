#!/usr/bin/env bash
# Installs the Debian packages draplane builds, tests and benchmarks with.
# Idempotent: apt runs only when a package is missing (STYLE.md, "Build and dependencies").
# Usage: install_deps.sh [unsanitized]
#   unsanitized: also what only unsanitized builds link (dev, release: jemalloc); the sanitizer
#   builds of `make test` do not need it.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  clang libclang-rt-14-dev lld
  libboost1.81-dev libboost-json1.81-dev libssl-dev
  libyaml-cpp-dev libre2-dev libsqlite3-dev sqlite3
  libspdlog-dev libfmt-dev libcli11-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  etcd-server etcd-client
  python3 python3-yaml
  chromium
)
if [ "${1:-}" = unsanitized ]; then
  packages+=(libjemalloc-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install_deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

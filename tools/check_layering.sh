#!/usr/bin/env bash
# Fails when a source file under src/<module>/ includes a header of a module it may not depend on.
# The allowed edges are declared once, in cmake/Modules.cmake (DRAPLANE_EDGES_<module>).
# Also enforces: nothing includes bin/ or cli/ from another module, only server/http/ (and the
# client and etcd transports) include Boost.Beast or Asio, and only the kubelet plugin and the
# fake kubelet include gRPC or the kubelet API code generated for it.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed
while IFS= read -r line; do
  if [[ $line =~ ^set\(DRAPLANE_EDGES_([a-z_]+)[[:space:]]+\"([^\"]*)\"\) ]]; then
    allowed[${BASH_REMATCH[1]}]=";${BASH_REMATCH[2]};"
  fi
done < cmake/Modules.cmake

modules=$(ls -d src/*/ | xargs -n1 basename)
status=0
for module in $modules; do
  [ "$module" = "bin" ] && continue
  if [ -z "${allowed[$module]+x}" ]; then
    echo "layering: src/$module has no DRAPLANE_EDGES_$module entry in cmake/Modules.cmake"
    status=1
    continue
  fi
  while IFS=: read -r file lineno include; do
    target=${include#*\"}
    target=${target%%/*}
    [ "$target" = "$module" ] && continue
    # Only project modules are checked; other quoted includes are not module paths.
    [ -d "src/$target" ] || continue
    if [[ ${allowed[$module]} != *";$target;"* ]]; then
      echo "layering: $file:$lineno: $module may not include $target (${include#*#include })"
      status=1
    fi
  done < <(grep -rHnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "src/$module" || true)
done

# The HTTP library stays inside server/http (STYLE.md).
while IFS=: read -r file lineno _; do
  case "$file" in
    src/server/http/*|src/client/*|src/store/etcd/*) ;;
    *) echo "layering: $file:$lineno: Beast/Asio may only be included under src/server/http, src/client and src/store/etcd"; status=1 ;;
  esac
done < <(grep -rHnE '#[[:space:]]*include[[:space:]]+<boost/(beast|asio)' src || true)

# gRPC and the generated kubelet APIs stay with the kubelet plugin and the fake kubelet
# (docs/architecture.md).
while IFS=: read -r file lineno _; do
  case "$file" in
    src/agent/kubelet_plugin*|src/fakekubelet/*) ;;
    *) echo "layering: $file:$lineno: gRPC and the kubelet API protos may only be included by src/agent/kubelet_plugin* and src/fakekubelet"; status=1 ;;
  esac
done < <(grep -rHnE '#[[:space:]]*include[[:space:]]+(<grpcpp/|"(dra|dra-health|pluginregistration)/)' src || true)

exit $status

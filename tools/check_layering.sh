#!/usr/bin/env bash
# Fails when a source file under src/<module>/ includes a header of a module it may not depend on.
# The allowed edges are declared once, in cmake/Modules.cmake (DRAPLANE_EDGES_<module>).
# Also enforces: nothing includes bin/ or cli/ from another module, only server/http/ (and the
# client and etcd transports) include Boost.Beast or Asio, and only the kubelet plugin and the
# fake kubelet include gRPC or the kubelet API code generated for it. A test-only module
# (DRAPLANE_TEST_ONLY_MODULES, e.g. testing/) may be included by any module's tests (`*_test.cc`)
# and by nothing else. client/memory_api.h (the simulator's in-memory API) is included only by
# sim/, testing/ and tests.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed
test_only=";"
while IFS= read -r line; do
  if [[ $line =~ ^set\(DRAPLANE_EDGES_([a-z_]+)[[:space:]]+\"([^\"]*)\"\) ]]; then
    allowed[${BASH_REMATCH[1]}]=";${BASH_REMATCH[2]};"
  elif [[ $line =~ ^set\(DRAPLANE_TEST_ONLY_MODULES[[:space:]]+\"([^\"]*)\"\) ]]; then
    test_only=";${BASH_REMATCH[1]};"
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
    if [[ $test_only == *";$target;"* ]]; then
      [[ $file == *_test.cc ]] && continue
      echo "layering: $file:$lineno: only tests (*_test.cc) may include $target (${include#*#include })"
      status=1
      continue
    fi
    if [[ ${allowed[$module]} != *";$target;"* ]]; then
      echo "layering: $file:$lineno: $module may not include $target (${include#*#include })"
      status=1
    fi
  done < <(grep -rHnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "src/$module" || true)
done

# The in-memory API is the simulator's (docs/architecture.md, "client"): outside its own files only
# sim/, the test-support module and tests may use it, so no other component runs against
# semantics the server does not have.
while IFS=: read -r file lineno _; do
  case "$file" in
    src/client/memory_api.*|src/sim/*|src/testing/*|*_test.cc) ;;
    *) echo "layering: $file:$lineno: only sim/, testing/ and tests may include client/memory_api.h"; status=1 ;;
  esac
done < <(grep -rHnE '#[[:space:]]*include[[:space:]]+"client/memory_api\.h"' src || true)

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

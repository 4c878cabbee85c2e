# Garbage in: opaque parameters nested 5,000 mappings deep (YAML block style).
# expect: 1: line 5010: nesting deeper than 400 levels
lines = ["apiVersion: resource.k8s.io/v1", "kind: DeviceClass", "metadata:",
         "  name: gpu.nvidia.com", "spec:", "  config:", "  - opaque:",
         "      driver: gpu.nvidia.com", "      parameters:"]
for depth in range(5000):
    lines.append("  " * (depth + 4) + "level%d:" % depth)
lines.append("  " * 5004 + "leaf: 1")
print("\n".join(lines))

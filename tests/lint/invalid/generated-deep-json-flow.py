# Garbage in: opaque parameters nested 1,500 arrays deep (JSON), just past the JSON limit.
# expect: 1: line 1 column 1170: nesting deeper than 1000 levels
import json
head = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                   "metadata": {"name": "gpu.nvidia.com"}})[:-1]
print(head + ', "spec": {"config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": ' +
      "[" * 1500 + "]" * 1500 + "}}]}}")

# Garbage in: a JSON manifest cut off in the middle (a download that stopped early).
# expect: 1: line 2 column 1: incomplete JSON
import json
text = json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                   "metadata": {"name": "gpu.nvidia.com"},
                   "spec": {"selectors": [{"cel": {"expression": "device.driver == 'x'"}}]}})
print(text[:97])

#!/usr/bin/env python3
"""Writes a cluster dump for `draplane allocate` benchmarks (issue 4 (e)).

NODES nodes, each with one ResourceSlice of DEVICES GPUs (attributes as NVIDIA's driver publishes
them, a memory capacity), the Node objects, one DeviceClass, as `kubectl get -o json|yaml` writes
a List; plus a one-GPU claim.
Usage: allocator_gen_dump.py OUT_DIR [NODES [DEVICES]]
Writes OUT_DIR/cluster.json, OUT_DIR/cluster.yaml and OUT_DIR/claim.yaml.
"""
import json
import os
import sys


def main():
    out = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    devices = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    os.makedirs(out, exist_ok=True)
    items = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
    }]
    for n in range(nodes):
        name = "node-%d" % n
        items.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "zone-%d" % (n % 3),
                "nvidia.com/gpu.present": "true"}},
        })
        devs = []
        for d in range(devices):
            devs.append({
                "name": "gpu-%d" % d,
                "attributes": {
                    "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                    "architecture": {"string": "Ampere"},
                    "uuid": {"string": "GPU-%08d-%04d" % (n, d)},
                    "index": {"int": d},
                    "numa": {"int": d // 5},
                    "driverVersion": {"version": "550.54.15"},
                    "cudaComputeCapability": {"version": "8.0.0"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            })
        items.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "%s-gpu.example.com" % name,
                         "uid": "00000000-0000-4000-8000-%012d" % n, "resourceVersion": "1"},
            "spec": {"driver": "gpu.example.com", "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devs},
        })
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    with open(os.path.join(out, "cluster.json"), "w") as f:
        json.dump(doc, f, indent=4)
    try:
        import yaml
        with open(os.path.join(out, "cluster.yaml"), "w") as f:
            yaml.safe_dump(doc, f, default_flow_style=False, sort_keys=False)
    except ImportError:
        sys.stderr.write("python3-yaml missing: no cluster.yaml\n")
    with open(os.path.join(out, "claim.yaml"), "w") as f:
        f.write("""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu, namespace: bench}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].numa == 1'}
""")


if __name__ == "__main__":
    main()

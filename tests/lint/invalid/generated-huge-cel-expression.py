# Garbage in: a 10 MB CEL expression in a claim.
# expect: 1: ResourceClaim/gpu: spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes
print("""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu
  namespace: team-a
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel:
            expression: '""" + 'device.driver == "x" || ' * (10 * 1024 * 1024 // 24) + "true'")

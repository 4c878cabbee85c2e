# Garbage in: a 10 MB annotation value. Lint reports the 256 KiB annotation limit, not a crash.
# expect: 1: DeviceClass/gpu.nvidia.com: metadata.annotations: Too long: may not be more than 262144 bytes
print("""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
  annotations:
    platform.example.com/inventory: """ + "a" * (10 * 1024 * 1024))

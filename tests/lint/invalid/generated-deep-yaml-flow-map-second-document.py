# Garbage in: a valid first document, then opaque parameters nested 550 flow mappings deep in the
# second. The error names the second document.
# expect: 2: line 14: nesting deeper than 400 levels
head = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: fpga.example.com
spec:
  config:
  - opaque:
      driver: fpga.example.com
      parameters: """
print(head + "{k: " * 550 + "1" + "}" * 550)

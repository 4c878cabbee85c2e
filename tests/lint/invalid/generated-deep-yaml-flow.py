# Garbage in: opaque parameters nested 600 flow sequences deep (YAML flow style), past the YAML
# limit of 400 levels but short of the 10,000 of generated-deep-yaml; once a bare "bad file".
# expect: 1: line 9: nesting deeper than 400 levels
print("""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  config:
  - opaque:
      driver: gpu.nvidia.com
      parameters: """ + "[" * 600 + "]" * 600)

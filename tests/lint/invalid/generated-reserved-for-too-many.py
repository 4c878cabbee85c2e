# A claim shared by 257 pods: at most 256 consumers.
# expect: 1: ResourceClaim/shared-nic: status.reservedFor: Too many: 257: must have at most 256 items
print("""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shared-nic
  namespace: team-a
spec:
  devices:
    requests:
    - name: nic
      exactly:
        deviceClassName: nic.example.com
status:
  allocation:
    devices:
      results:
      - request: nic
        driver: nic.example.com
        pool: node-1
        device: eth1
  reservedFor:""")
for i in range(257):
    print("  - resource: pods\n    name: worker-%d\n    uid: 00000000-0000-4000-8000-%012d" % (i, i))

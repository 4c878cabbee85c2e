#!/usr/bin/env python3
"""The placement table of `make run` (tools/run_demo.sh).

Usage: demo_table.py OBJECTS_JSON CLAIMS_WIDE_TXT

OBJECTS_JSON is `kubectl get pods,resourceclaims,resourceslices -A -o json`; CLAIMS_WIDE_TXT is
`kubectl get resourceclaims -A -o wide --no-headers`. Prints, per Pod: where it runs, each of its
claims with the subrequest the scheduler chose (`gpus -> a100-pair`) and the devices it got, or
why it is Pending (the scheduler's whole message below the table). Then checks that every
claim's devices, as printed, are exactly what kubectl's DEVICES column shows for that claim;
exits 1 if one differs. Devices the node agents report unhealthy (a taint in their slice) are
listed at the end.
"""
import json
import sys
import textwrap


def devices_of(claim):
    """request=driver/pool/device,... in allocation order: kubectl's DEVICES column."""
    allocation = claim.get("status", {}).get("allocation")
    if not allocation:
        return ""
    results = allocation.get("devices", {}).get("results", [])
    return ",".join(f'{r["request"]}={r["driver"]}/{r["pool"]}/{r["device"]}' for r in results)


def chosen(claim):
    """'gpus -> h100' for a firstAvailable request, 'gpus' for exactly, one per request."""
    allocation = claim.get("status", {}).get("allocation")
    if not allocation:
        return "-"
    seen = []
    for r in allocation.get("devices", {}).get("results", []):
        request = r["request"]
        label = request.replace("/", " -> ", 1) if "/" in request else request
        if label not in seen:
            seen.append(label)
    return ", ".join(seen)


def short_devices(claim):
    """pool/device names grouped, e.g. 'h100-3: gpu-0,gpu-1' (bandwidth shares marked)."""
    allocation = claim.get("status", {}).get("allocation")
    if not allocation:
        return "-"
    by_pool = {}
    for r in allocation.get("devices", {}).get("results", []):
        name = r["device"]
        consumed = r.get("consumedCapacity")
        if consumed:
            name += "(" + ",".join(f"{k}={v}" for k, v in sorted(consumed.items())) + ")"
        by_pool.setdefault(r["pool"], []).append(name)
    return "; ".join(f"{pool}: {','.join(names)}" for pool, names in by_pool.items())


def pending_reason(pod):
    """The scheduler's message in the PodScheduled condition, whole."""
    for c in pod.get("status", {}).get("conditions", []):
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("message") or c.get("reason", "")
    return "waiting for the scheduler"


def short(reason):
    return reason if len(reason) <= 60 else reason[:57] + "..."


def main():
    items = json.load(open(sys.argv[1]))["items"]
    pods = [i for i in items if i["kind"] == "Pod"]
    claims = {(i["metadata"]["namespace"], i["metadata"]["name"]): i
              for i in items if i["kind"] == "ResourceClaim"}
    rows = []
    waiting = []  # (namespace/name, the scheduler's whole message)
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        phase = pod.get("status", {}).get("phase", "Pending")
        node = pod["spec"].get("nodeName") or "-"
        names = [s["resourceClaimName"] for s in pod.get("status", {}).get("resourceClaimStatuses", [])
                 if s.get("resourceClaimName")]
        for ref in pod["spec"].get("resourceClaims", []):
            if ref.get("resourceClaimName"):
                names.append(ref["resourceClaimName"])
        extended = pod.get("status", {}).get("extendedResourceClaimStatus", {})
        if extended.get("resourceClaimName"):
            names.append(extended["resourceClaimName"])
        note = ""
        if node == "-":
            waiting.append((f"{ns}/{name}", pending_reason(pod)))
            note = short(waiting[-1][1])
        if not names:
            requested = {}
            for c in pod["spec"].get("containers", []):
                requested.update(c.get("resources", {}).get("requests", {}))
            plugin = ", ".join(f"{k}: {v}" for k, v in sorted(requested.items()) if "/" in k)
            rows.append((ns, name, phase, node, "-", "-",
                         f"{plugin} (device plugin)" if plugin and node != "-" else "-", note))
            continue
        for claim_name in names:
            claim = claims.get((ns, claim_name), {})
            rows.append((ns, name, phase, node, claim_name, chosen(claim),
                         short_devices(claim) if claim else "-", note))
            note = ""
    header = ("TENANT", "POD", "STATUS", "NODE", "CLAIM", "REQUEST -> CHOSEN", "DEVICES",
              "WHY PENDING")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header) - 1)]
    for r in [header] + rows:
        line = "  ".join(str(v).ljust(widths[i]) for i, v in enumerate(r[:-1]))
        print((line + "  " + r[-1]).rstrip())

    for who, reason in waiting:
        print()
        print(textwrap.fill(f"{who} is Pending: {reason}", width=100, subsequent_indent="    "))

    # The devices above against kubectl's view of the same claims.
    wide = {}
    for line in open(sys.argv[2]):
        fields = line.split()
        if len(fields) >= 5:
            # NAMESPACE NAME STATE AGE DEVICES [RESERVED FOR]
            wide[(fields[0], fields[1])] = "" if fields[4] == "<none>" else fields[4]
    mismatches = [(key, devices_of(c), wide.get(key)) for key, c in sorted(claims.items())
                  if wide.get(key) != devices_of(c)]
    allocated = sum(1 for c in claims.values() if devices_of(c))
    pending = sum(1 for p in pods if not p["spec"].get("nodeName"))
    running = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
    print()
    print(f"{len(pods)} pods: {running} running, {pending} pending; {len(claims)} claims, "
          f"{allocated} allocated.")
    if mismatches:
        for key, mine, theirs in mismatches:
            print(f"MISMATCH {key[0]}/{key[1]}: table {mine!r}, kubectl {theirs!r}")
        return 1
    print(f"Devices of all {len(claims)} claims match `kubectl get resourceclaims -A -o wide`.")
    for s in sorted((i for i in items if i["kind"] == "ResourceSlice"),
                    key=lambda s: s["metadata"]["name"]):
        for d in s["spec"].get("devices", []):
            for t in d.get("taints", []):
                effect = t["effect"]
                note = "reported only" if effect == "None" else "no new claim gets it"
                print(f'Tainted device {s["spec"]["pool"]["name"]}/{d["name"]}: '
                      f'{t["key"]}:{effect} since {t.get("timeAdded", "?")} ({note})')
    return 0


if __name__ == "__main__":
    sys.exit(main())

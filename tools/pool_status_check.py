#!/usr/bin/env python3
"""Recomputes ResourcePoolStatusRequest answers from slices and claims (tools/run_demo.sh).

Usage: pool_status_check.py OBJECTS_JSON ANSWERS_JSON...

OBJECTS_JSON is `kubectl get resourceslices,resourceclaims,devicetaintrules -A -o json`; each
ANSWERS_JSON holds ResourcePoolStatusRequests (one object or a list: what kubectl get returns
for the requests the server's controller answered, or what `draplane pools -o json` prints).
For every request the pools are recomputed here, independently of draplane's C++ code, from
KEP-5677 as written (keps/sig-node/5677-dra-resource-availability-visibility): pools at their
highest generation, devices held by non-admin-access results counted once, NoSchedule/NoExecute
taints from slices and DeviceTaintRules (driver/pool/device selectors), partitionSummary against
the shared counters, shareableSummary over allowMultipleAllocations devices. Prints one line per
pool and exits 1 when an answer differs from the recomputation.
"""
import json
import sys
from fractions import Fraction

SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
            "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(text):
    text = str(text)
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix) and suffix:
            return Fraction(text[: -len(suffix)]) * SUFFIXES[suffix]
    return Fraction(text)


def taints(taint):
    return taint.get("effect") in ("NoSchedule", "NoExecute")


def rule_selects(rule, driver, pool, device):
    # A rule without a selector selects nothing (KEP-5677; draplane's guardrail says the same
    # unless the rule is annotated draplane.dev/select-all).
    s = rule["spec"].get("deviceSelector") or {}
    if not any(s.get(k) for k in ("driver", "pool", "device")):
        return rule["metadata"].get("annotations", {}).get("draplane.dev/select-all") == "true"
    return all(s.get(k) in (None, v) for k, v in (("driver", driver), ("pool", pool),
                                                    ("device", device)))


def attribute(device, driver, name):
    attrs = device.get("attributes", {})
    value = attrs.get(name)
    if value is None and "/" in name and name.split("/", 1)[0] == driver:
        value = attrs.get(name.split("/", 1)[1])
    return None if value is None else value.get("string")


def consumption(device):
    out = {}
    for use in device.get("consumesCounters", []):
        for name, c in use.get("counters", {}).items():
            key = (use["counterSet"], name)
            out[key] = out.get(key, 0) + quantity(c["value"])
    return out


def recompute(spec, slices, claims, rules):
    driver = spec["driver"]
    pools = {}
    for s in slices:
        sp = s["spec"]
        if sp["driver"] != driver or spec.get("poolName") not in (None, sp["pool"]["name"]):
            continue
        gen = int(sp["pool"].get("generation", 0))
        p = pools.setdefault(sp["pool"]["name"], {"gen": gen, "slices": []})
        if gen > p["gen"]:
            p["gen"], p["slices"] = gen, []
        if gen == p["gen"]:
            p["slices"].append(s)
    held = {}  # pool -> {device}, consumed capacity by name
    consumed = {}
    for c in claims:
        alloc = c.get("status", {}).get("allocation")
        for r in (alloc or {}).get("devices", {}).get("results", []):
            if r["driver"] != driver or r.get("adminAccess"):
                continue
            held.setdefault(r["pool"], set()).add(r["device"])
            for name, q in r.get("consumedCapacity", {}).items():
                per_pool = consumed.setdefault(r["pool"], {})
                per_pool[name] = per_pool.get(name, 0) + quantity(q)
    out = []
    for name in sorted(pools):
        p = pools[name]
        slices_ = sorted(p["slices"], key=lambda s: s["metadata"]["name"])
        expected = int(slices_[0]["spec"]["pool"].get("resourceSliceCount", 0))
        pool = {"driver": driver, "poolName": name, "generation": p["gen"]}
        nodes = {s["spec"].get("nodeName") for s in slices_}
        if len(nodes) == 1 and None not in nodes and "" not in nodes:
            pool["nodeName"] = nodes.pop()
        if len(slices_) < expected:
            pool["validationError"] = "PoolIncomplete"
            out.append(pool)
            continue
        devices = [(s, d) for s in slices_ for d in s["spec"].get("devices", [])]
        in_use = held.get(name, set())
        unavailable = sum(
            1 for s, d in devices
            if any(taints(t) for t in d.get("taints", []))
            or any(taints(r["spec"]["taint"]) and rule_selects(r, driver, name, d["name"])
                   for r in rules))
        pool.update(resourceSliceCount=len(slices_), totalDevices=len(devices),
                    allocatedDevices=len(in_use), unavailableDevices=unavailable,
                    availableDevices=max(0, len(devices) - len(in_use) - unavailable))
        error = None
        # partitionSummary
        declared = any(s["spec"].get("partitionTypeAttribute") for s in slices_)
        available = {}
        for s in slices_:
            for cs in s["spec"].get("sharedCounters", []):
                for cname, c in cs.get("counters", {}).items():
                    available[(cs["name"], cname)] = quantity(c["value"])
        for s, d in devices:
            if d["name"] in in_use:
                for k, v in consumption(d).items():
                    if k in available:
                        available[k] -= v
        groups = {}
        resolved = False
        for s, d in devices:
            if not d.get("consumesCounters"):
                continue
            attr = s["spec"].get("partitionTypeAttribute") if declared else \
                spec.get("defaultPartitionTypeAttribute")
            if not attr:
                continue
            resolved = True
            kind = attribute(d, driver, attr)
            if kind is None:
                error = "PartitionTypeMissing:"
                break
            g = groups.setdefault((attr, kind), {"total": 0, "fresh": [], "cost": None})
            g["total"] += 1
            cost = {}
            for (_, cname), v in consumption(d).items():
                cost[cname] = cost.get(cname, 0) + v
            if g["cost"] is None:
                g["cost"] = cost
            elif g["cost"] != cost:
                error = "PartitionCostMismatch:"
                break
            if d["name"] not in in_use:
                g["fresh"].append(d)
        if not error and resolved and not any(s["spec"].get("sharedCounters") for s in slices_):
            error = "PartitionTypeMissing:"
        if not error and len(groups) > 32:
            error = "PartitionSummaryOverCap:"
        if not error and resolved:
            summary = []
            for (attr, kind) in sorted(groups):
                left = dict(available)
                fits = 0
                for d in groups[(attr, kind)]["fresh"]:
                    need = consumption(d)
                    if all(k in left and left[k] >= v for k, v in need.items()):
                        fits += 1
                        for k, v in need.items():
                            left[k] -= v
                summary.append({"attribute": attr, "type": kind,
                                "total": groups[(attr, kind)]["total"], "allocatable": fits})
            pool["partitionSummary"] = summary
        # shareableSummary
        shareable = [d for _, d in devices if d.get("allowMultipleAllocations")]
        if shareable:
            total = {}
            for d in shareable:
                for cname, c in d.get("capacity", {}).items():
                    total[cname] = total.get(cname, 0) + quantity(c["value"])
            if len(total) > 32:
                error = error or "ShareableSummaryOverCap:"
            else:
                used = consumed.get(name, {})
                pool["shareableSummary"] = {
                    "fullyAvailableDevices": sum(1 for d in shareable if d["name"] not in in_use),
                    "partiallyAvailableDevices": sum(1 for d in shareable if d["name"] in in_use),
                    "capacity": [{"name": k, "total": total[k], "consumed": used.get(k, 0),
                                  "available": max(0, total[k] - used.get(k, 0))}
                                 for k in sorted(total)]}
        if error:
            pool["validationError"] = error
            pool.pop("partitionSummary", None)
        out.append(pool)
    return len(pools), out[: int(spec.get("limit", 100))]


def normalise(pool):
    """The answer's pool in the recomputation's terms: quantities as numbers, errors by prefix."""
    p = dict(pool)
    if "validationError" in p:
        p["validationError"] = p["validationError"].split(" ", 1)[0]
    if "shareableSummary" in p:
        s = dict(p["shareableSummary"])
        s["capacity"] = [{k: (quantity(v) if k != "name" else v) for k, v in c.items()}
                         for c in s.get("capacity", [])]
        p["shareableSummary"] = s
    if not p.get("partitionSummary"):
        p.pop("partitionSummary", None)
    return p


def main():
    objects = json.load(open(sys.argv[1]))["items"]
    kinds = {k: [o for o in objects if o["kind"] == k]
             for k in ("ResourceSlice", "ResourceClaim", "DeviceTaintRule")}
    failed = False
    checked = 0
    for path in sys.argv[2:]:
        answers = json.load(open(path))
        for request in answers.get("items", [answers]):
            status = request.get("status")
            name = request["metadata"]["name"]
            if not status:
                print(f"{path}: {name}: no status")
                failed = True
                continue
            count, pools = recompute(request["spec"], kinds["ResourceSlice"],
                                     kinds["ResourceClaim"], kinds["DeviceTaintRule"])
            got = [normalise(p) for p in status.get("pools", [])]
            if status.get("poolCount") != count or got != pools:
                failed = True
                print(f"{path}: {name}: MISMATCH\n  answer:     poolCount={status.get('poolCount')} "
                      f"{got}\n  recomputed: poolCount={count} {pools}")
                continue
            for p in got:
                checked += 1
                extra = ""
                if p.get("partitionSummary"):
                    extra += " partitions " + ",".join(
                        f'{e["type"]}:{e["allocatable"]}/{e["total"]}' for e in p["partitionSummary"])
                if p.get("shareableSummary"):
                    s = p["shareableSummary"]
                    extra += (f' shared {s["fullyAvailableDevices"]} free/'
                              f'{s["partiallyAvailableDevices"]} in use')
                if p.get("validationError"):
                    extra += " " + p["validationError"]
                print(f'  {name}: {p["driver"]}/{p["poolName"]}: total {p.get("totalDevices")} '
                      f'allocated {p.get("allocatedDevices")} available {p.get("availableDevices")} '
                      f'unavailable {p.get("unavailableDevices")}{extra}')
    print(f"{checked} pool answers equal the recomputation from slices and claims"
          if not failed else "pool status differs from the recomputation")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

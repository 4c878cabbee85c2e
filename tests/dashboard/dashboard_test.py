#!/usr/bin/env python3
"""The dashboard in a real browser against the `make run` demo cluster (tools/run_demo.sh
--check-dashboard): headless Chromium, driven through the DevTools protocol (cdp.py), loads
/dashboard/ with the admin's token and with a tenant's, and checks what it shows against what
kubectl reads from the same server. Screenshots go to OUT_DIR.

Usage: dashboard_test.py URL KUBECONFIG DATA_DIR DRAPLANE OUT_DIR
"""

import datetime
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

url, kubeconfig, data_dir, draplane, out_dir = sys.argv[1:6]
os.makedirs(out_dir, exist_ok=True)
env = dict(os.environ, KUBECONFIG=kubeconfig)


def kubectl(*args, stdin=None):
    return subprocess.run(["kubectl", *args], env=env, input=stdin, text=True, check=True,
                          capture_output=True).stdout


def token_of(config):
    for line in config.splitlines():
        line = line.strip()
        if line.startswith("token:"):
            return line.split(":", 1)[1].strip().strip('"')
    raise AssertionError("no token in kubeconfig")


def nonempty(js_array):
    """A JavaScript expression that is null until the array `js_array` has elements."""
    return f"(a => a.length ? a : null)({js_array})"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


objects = json.loads(kubectl("get", "nodes,pods,resourceclaims,resourceslices,devicetaintrules",
                             "-A", "-o", "json"))
items = objects["items"]
nodes = sorted(o["metadata"]["name"] for o in items if o["kind"] == "Node")
claims = [o for o in items if o["kind"] == "ResourceClaim"]
pods = [o for o in items if o["kind"] == "Pod"]
slices = [o for o in items if o["kind"] == "ResourceSlice"]
taint_rules = [o for o in items if o["kind"] == "DeviceTaintRule"]

# A MIG GPU: the partitions drawing from one counter set of one pool.
mig = {}
for s in slices:
    for d in s["spec"].get("devices", []):
        for c in d.get("consumesCounters", []):
            mig.setdefault((s["spec"]["pool"]["name"], c["counterSet"]), []).append(d["name"])
allocated = sorted((c for c in claims if c.get("status", {}).get("allocation")),
                   key=lambda c: (c["metadata"]["namespace"], c["metadata"]["name"]))
held = {f"{r['driver']}/{r['pool']}/{r['device']}" for c in allocated
        for r in c["status"]["allocation"]["devices"]["results"]}
# A MIG GPU with a partition in use, if the demo has one (its other partitions may be blocked).
mig_sets = sorted((k, v) for k, v in mig.items() if len(v) > 1)
in_use = [(k, v) for k, v in mig_sets if any(f"gpu.nvidia.com/{k[0]}/{d}" in held for d in v)]
(mig_pool, mig_set), partitions = (in_use or mig_sets)[0]


def quantity(q):
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", str(q).strip())
    scale = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    return float(m.group(1)) * scale[m.group(2)]


def rule_taints(driver, pool, device):
    """The taints of the DeviceTaintRules selecting a device (api/device_taints.h)."""
    out = []
    for r in taint_rules:
        sel = r["spec"].get("deviceSelector") or {}
        if not any(sel.get(k) for k in ("driver", "pool", "device")):
            selects = r["metadata"].get("annotations", {}).get("draplane.dev/select-all") == "true"
        else:
            selects = all(not sel.get(k) or sel[k] == v
                          for k, v in (("driver", driver), ("pool", pool), ("device", device)))
        if selects:
            out.append(r["spec"]["taint"])
    return out


def expected_states(pool, counter_set):
    """Each device of the counter set: allocated, unavailable (a NoSchedule/NoExecute taint of its
    own), blocked (what its allocated siblings left of the counters does not fit it), or idle."""
    left, devices = {}, []
    for s in slices:
        if s["spec"]["pool"]["name"] != pool:
            continue
        for cs in s["spec"].get("sharedCounters", []):
            for name, c in cs.get("counters", {}).items():
                left[(cs["name"], name)] = quantity(c["value"])
        devices += [(s["spec"]["driver"], d) for d in s["spec"].get("devices", [])]
    for driver, d in devices:
        if f"{driver}/{pool}/{d['name']}" in held:
            for use in d.get("consumesCounters", []):
                for name, c in use.get("counters", {}).items():
                    left[(use["counterSet"], name)] = left.get((use["counterSet"], name), 0) - quantity(c["value"])
    out = {}
    for driver, d in devices:
        uses = d.get("consumesCounters", [])
        if not any(u["counterSet"] == counter_set for u in uses):
            continue
        if f"{driver}/{pool}/{d['name']}" in held:
            out[d["name"]] = "allocated"
        elif any(t.get("effect") in ("NoSchedule", "NoExecute")
                 for t in d.get("taints", []) + rule_taints(driver, pool, d["name"])):
            out[d["name"]] = "unavailable"
        elif any(left.get((u["counterSet"], n), float("inf")) < quantity(c["value"])
                 for u in uses for n, c in u.get("counters", {}).items()):
            out[d["name"]] = "blocked"
        else:
            out[d["name"]] = "idle"
    return out
check(allocated, "the demo has allocated claims")
pending = []
for p in pods:
    if p["spec"].get("nodeName"):
        continue
    for c in p.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            pending.append((p, c))
check(pending, "the demo has Pending Pods with a reason")


def tier_mix(claims):
    """Allocated requests by tier, as the overview counts them: one per request of a claim
    (however many devices it got), "exactly" or "tier N" for the index of the chosen
    firstAvailable subrequest (a result's request is "request/subrequest")."""
    mix = {}
    for c in claims:
        requests = {r["name"]: r for r in c["spec"]["devices"].get("requests", [])}
        chosen = {}
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            request, _, sub = r["request"].partition("/")
            if not sub:
                chosen[request] = "exactly"
            else:
                names = [s["name"] for s in requests[request]["firstAvailable"]]
                chosen[request] = f"tier {names.index(sub)}"
        for tier in chosen.values():
            mix[tier] = mix.get(tier, 0) + 1
    return mix


# The browser's clock runs a day ahead of the server's: waits must come from the server's time
# (the Date header of its answers), not from the browser's.
SKEW_MS = 24 * 3600 * 1000
skewed_clock = f"(() => {{ const now = Date.now.bind(Date); Date.now = () => now() + {SKEW_MS}; }})();"

browser = cdp.Browser()
try:
    admin_config = subprocess.run(
        [draplane, "kubeconfig", "--data-dir", data_dir, "--user", "dashboard-admin",
         "--groups", "system:masters"], text=True, check=True, capture_output=True).stdout
    admin = browser.open(f"{url}/dashboard/#token={token_of(admin_config)}", skewed_clock)
    browser.wait_for(admin, "document.body?.dataset.loaded === 'true'", "the admin's first lists")
    check(browser.evaluate(admin, "location.hash") == "#/overview",
          "the token left the address bar")

    # The fallback-tier mix: the chart's legend and lines against the claims' allocation results,
    # read with kubectl from the same server (re-read while the page catches up with a change).
    def page_mix():
        return browser.evaluate(admin, "Object.fromEntries([...document.querySelectorAll("
                                       "'figure.tiers [data-tier]')].map(e => [e.dataset.tier, "
                                       "Number(e.dataset.count)]))")

    expected_mix, shown_mix = None, None
    for _ in range(40):  # a guard against hangs, not a timing
        expected_mix = tier_mix(json.loads(kubectl("get", "resourceclaims", "-A", "-o", "json"))["items"])
        shown_mix = browser.wait_for(admin, "document.querySelector('figure.tiers [data-tier]') && 1",
                                     "the fallback-tier chart") and page_mix()
        if shown_mix == expected_mix:
            break
        browser.evaluate(admin, "new Promise(r => setTimeout(r, 500))")
    check(shown_mix == expected_mix and any(t.startswith("tier ") for t in expected_mix),
          f"the fallback-tier mix is the claims' allocations: {shown_mix} (kubectl: {expected_mix})")
    lines = browser.evaluate(admin, "[...document.querySelectorAll('figure.tiers svg.chart "
                                    "polyline')].map(e => e.dataset.series)")
    check(sorted(lines) == sorted(expected_mix), f"the tier chart draws a line per tier: {lines}")
    check(browser.evaluate(admin, "document.querySelector('figure.tiers svg.chart')"
                                  ".getAttribute('role')") == "img"
          and all(f"{t} {n}" in browser.evaluate(admin, "document.querySelector("
                                                        "'figure.tiers svg.chart desc').textContent")
                  for t, n in expected_mix.items()),
          "the tier chart is an image described by its present counts")
    # The Pending Pods card counts every Pod without a node, as kubectl and the Pending view do
    # (also those the scheduler has not tried, which carry no PodScheduled condition).
    def card_count(title):
        return browser.evaluate(admin, "Number([...document.querySelectorAll('.card')].find("
                                       f"c => c.firstChild.textContent === '{title}')"
                                       "?.lastChild.textContent)")

    expected_pending, shown_pending = None, None
    for _ in range(40):  # a guard against hangs, not a timing
        expected_pending = sum(1 for p in json.loads(kubectl("get", "pods", "-A", "-o", "json"))["items"]
                               if not p["spec"].get("nodeName"))
        shown_pending = card_count("Pending Pods")
        if shown_pending == expected_pending:
            break
        browser.evaluate(admin, "new Promise(r => setTimeout(r, 500))")
    check(shown_pending == expected_pending and expected_pending > 0,
          f"the Pending Pods card counts the Pods without a node: {shown_pending} "
          f"(kubectl: {expected_pending})")
    browser.screenshot(admin, os.path.join(out_dir, "overview.png"))

    # Tenants: the waits of a tenant's Pending Pods (unscheduled), oldest and median, from their
    # creationTimestamps and the server's time although the browser's clock is a day ahead.
    browser.evaluate(admin, "location.hash = '#/tenants'")
    ns = sorted(p["metadata"]["namespace"] for p, _ in pending)[0]

    def unscheduled_created():
        pods_now = json.loads(kubectl("get", "pods", "-n", ns, "-o", "json"))["items"]
        return sorted(datetime.datetime.fromisoformat(
            p["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
            for p in pods_now if not p["spec"].get("nodeName"))

    row, created = None, None
    for _ in range(40):  # a guard against hangs, not a timing
        created = unscheduled_created()
        row = browser.wait_for(
            admin, f"(e => e ? {{...e.dataset, text: e.innerText}} : null)"
                   f"(document.querySelector('[data-tenant=\"{ns}\"]'))", f"the row of tenant {ns}")
        if row.get("pending") == str(len(created)):
            break
        browser.evaluate(admin, "new Promise(r => setTimeout(r, 500))")
    n = len(created)
    check(n and row.get("pending") == str(n), f"{ns}: the tenants page counts its {n} Pending Pods")
    median_created = (created[n // 2] if n % 2 else
                      created[n // 2 - 1] + (created[n // 2] - created[n // 2 - 1]) / 2)
    oldest_ms, median_ms = float(row["oldestWaitMs"]), float(row["medianWaitMs"])
    check(oldest_ms - median_ms == (median_created - created[0]).total_seconds() * 1000,
          f"{ns}: oldest and median wait are {(median_created - created[0]).total_seconds()} s apart, "
          "as their Pods' creationTimestamps")
    check(0 <= oldest_ms < SKEW_MS / 2,
          f"{ns}: the oldest wait ({oldest_ms / 1000:.0f} s) is on the server's clock, not the browser's "
          "(a day ahead)")
    cells = row["text"].split("\t")
    check(re.fullmatch(r"\d+[smh]", cells[3]) and re.fullmatch(r"\d+[smh]", cells[4]),
          f"{ns}: the tenants page shows the longest and the median wait: {cells[3]}, {cells[4]}")
    browser.screenshot(admin, os.path.join(out_dir, "tenants.png"))

    browser.evaluate(admin, f"location.hash = '#/nodes/{mig_pool}'")
    shown = browser.wait_for(
        admin, nonempty("[...document.querySelectorAll('[data-node]')].map(e => e.dataset.node)"),
        "the node table")
    check(sorted(shown) == nodes, f"every node is listed ({len(nodes)})")
    chips = browser.wait_for(
        admin,
        nonempty(f"[...document.querySelectorAll('[data-physical=\"{mig_pool}/{mig_set}\"] "
                 "[data-device]')].map(e => e.dataset.device)"), "the MIG GPU's partitions")
    check(sorted(chips) == sorted(partitions),
          f"{mig_pool} {mig_set}: its {len(partitions)} partitions are drawn in one physical GPU")
    shown_states = dict(browser.evaluate(
        admin, f"[...document.querySelectorAll('[data-physical=\"{mig_pool}/{mig_set}\"] "
               "[data-device]')].map(e => [e.dataset.device, e.classList[1]])"))
    want_states = expected_states(mig_pool, mig_set)
    check(shown_states == want_states,
          f"{mig_pool} {mig_set}: each partition's state follows the shared counters its allocated "
          f"siblings left ({sorted(set(want_states.values()))}): {shown_states} vs {want_states}")
    browser.screenshot(admin, os.path.join(out_dir, "nodes.png"))

    browser.evaluate(admin, "location.hash = '#/claims'")
    for c in allocated[:5]:
        k = f"{c['metadata']['namespace']}/{c['metadata']['name']}"
        row = browser.wait_for(admin, f"document.querySelector('[data-claim=\"{k}\"]')?.innerText",
                               f"the row of claim {k}")
        for r in c["status"]["allocation"]["devices"]["results"]:
            check(f"{r['pool']}/{r['device']}" in row, f"claim {k} shows device {r['pool']}/{r['device']}")
        for ref in c["status"].get("reservedFor", []):
            check(ref["name"] in row, f"claim {k} shows its Pod {ref['name']}")
    browser.screenshot(admin, os.path.join(out_dir, "claims.png"))

    browser.evaluate(admin, "location.hash = '#/pending'")
    for p, cond in pending:
        k = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        row = browser.wait_for(admin, f"document.querySelector('[data-pod=\"{k}\"]')?.innerText",
                               f"the row of Pending Pod {k}")
        check(cond.get("reason", "") in row, f"{k} shows its reason {cond.get('reason')}")
        first = cond.get("message", "").split(";")[0].split("\n")[0].strip()
        check(first in row, f"{k} shows why: {first[:60]}")
    browser.screenshot(admin, os.path.join(out_dir, "pending.png"))

    # A Pod the scheduler has not tried because its claim is not created (its template is
    # missing) says so instead of leaving the reason empty.
    ns = "default"  # no tenant quota there that a Pod without requests could break
    kubectl("apply", "-f", "-", stdin=f"""
apiVersion: v1
kind: Pod
metadata: {{name: no-template, namespace: {ns}}}
spec:
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: missing-template}}]
  containers: [{{name: c, image: registry.example.com/app:1, resources: {{claims: [{{name: gpu}}]}}}}]
""")
    row = browser.wait_for(
        admin, f"(r => r && r.includes('ClaimNotCreated') ? r : null)("
        f"document.querySelector('[data-pod=\"{ns}/no-template\"]')?.innerText)",
        "the row of a Pod whose claim is not created")
    check("claim gpu" in row, f"the Pod whose claim is not created names it: {row[:120]}")
    kubectl("delete", "pod", "no-template", "-n", ns, "--wait=false")

    # A Pending Pod's explanation tree, opened with the keyboard only, against what
    # `draplane explain pod -o json` says of it (both computed by scheduler::ExplainPodFromApi,
    # the page's through the server's draplane.dev PodExplanation): the first Pending Pod whose
    # explanation goes down to candidate devices.
    def explain_cli(key):
        return json.loads(subprocess.run(
            [draplane, "explain", "pod", key, "-o", "json", "--kubeconfig", kubeconfig],
            text=True, check=True, capture_output=True).stdout)

    def by_id(tree_id):
        return f"document.querySelector('[data-tree=\"{tree_id}\"]')"

    def press_enter_on(js_element):
        browser.evaluate(admin, f"{js_element}.focus()")
        browser.key(admin, "Enter", "Enter", 13, "\r")

    k, expected = None, None
    for p, _ in pending:
        key_of = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        e = explain_cli(key_of)
        if any(n.get("devices", {}).get("claims") for n in e["nodes"]):
            k, expected = key_of, e
            break
    check(k, "a Pending Pod's explanation names candidate devices")
    press_enter_on(f"document.querySelector('[data-explain=\"{k}\"]')")
    summary = browser.wait_for(
        admin, f"document.querySelector('[data-tree-summary=\"{k}\"]')?.innerText",
        f"the explanation of {k}")
    check(summary == expected["summary"], f"{k}: the tree's summary is explain pod's: {summary[:60]}")
    check(browser.evaluate(admin, f"document.querySelector('[data-explain=\"{k}\"]')"
                                  ".getAttribute('aria-expanded')") == "true",
          "the Explain button says it is expanded")
    # Branches open with Enter on their focused summary; the focus survives re-rendering.
    press_enter_on(by_id(f"{k}/nodes"))
    shown = browser.wait_for(
        admin, nonempty(f"[...document.querySelectorAll('[data-explanation=\"{k}\"] "
                        "[data-tree-node]')].map(e => e.dataset.treeNode)"),
        f"the nodes of {k}'s explanation")
    check(sorted(shown) == sorted(n["node"] for n in expected["nodes"]),
          f"{k}: every node's verdict is listed ({len(shown)})")
    # The first request with candidate devices, and the branches down to it: a firstAvailable
    # request lists its candidates under its subrequests (which Pod is Pending, and so which
    # requests it has, depends on the order the demo's Pods met the agents' slices).
    def with_candidates(request, request_id):
        if request.get("candidates"):
            return request, [request_id]
        for sub in request.get("subrequests", []):
            found, ids = with_candidates(sub, f"{request_id}/{sub['name']}")
            if found:
                return found, [request_id] + ids
        return None, []
    r0, branch_ids = None, []
    for n in expected["nodes"]:
        node_id = f"{k}/node/{n['node']}"
        for c in n.get("devices", {}).get("claims", []):
            claim_id = f"{node_id}/claim/{c['claim']}"
            for r in c.get("requests", []):
                r0, ids = with_candidates(r, f"{claim_id}/{r['name']}")
                if r0:
                    branch_ids = [node_id, claim_id] + ids
                    break
            if r0:
                break
        if r0:
            break
    check(r0, f"{k}: some request of its explanation has candidate devices")
    request_id = branch_ids[-1]
    for tree_id in branch_ids:
        browser.wait_for(admin, by_id(tree_id) + " !== null", f"the branch {tree_id}")
        press_enter_on(by_id(tree_id))
    # `open` is set at once, the children once the toggle event has re-rendered the page.
    text = browser.wait_for(
        admin, f"{by_id(request_id)}?.parentElement.querySelector(':scope > ul')?.innerText",
        f"the candidates of {request_id}")
    candidates = [f"{c['driver']}/{c['pool']}/{c['device']}: {c['status']}"
                  for c in r0.get("candidates", [])]
    missing = [line for line in candidates if line not in text]
    check(candidates and not missing,
          f"{request_id} shows its {len(candidates)} candidates with their status"
          + (f"; missing {missing[:3]}, it shows:\n{text[:2000]}" if missing else ""))
    check(browser.evaluate(admin, "document.activeElement?.dataset?.tree") == request_id,
          "the focus stayed on the branch opened last")
    browser.screenshot(admin, os.path.join(out_dir, "pending-explained.png"))

    # A fresh browser for the tenant (its own profile: nothing of the admin's session).
    browser.close()
    browser = cdp.Browser()

    # A tenant of team-vision: a Role to read its own namespace, a token minted for it.
    kubectl("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: dashboard-viewer, namespace: team-vision}
rules:
- apiGroups: ["", "resource.k8s.io"]
  resources: [pods, resourceclaims, resourcequotas]
  verbs: [get, list, watch]
- apiGroups: ["draplane.dev"]
  resources: [podexplanations]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dashboard-viewer, namespace: team-vision}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: dashboard-viewer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: vision-viewer}
""")
    tenant_config = subprocess.run(
        [draplane, "kubeconfig", "--data-dir", data_dir, "--user", "vision-viewer"],
        text=True, check=True, capture_output=True).stdout
    tenant = browser.open(
        f"{url}/dashboard/#token={token_of(tenant_config)}&namespace=team-vision")
    browser.wait_for(tenant, "document.body?.dataset.loaded === 'true'", "the tenant's first lists")
    browser.evaluate(tenant, "location.hash = '#/claims'")
    own = sorted(f"team-vision/{c['metadata']['name']}" for c in claims
                 if c["metadata"]["namespace"] == "team-vision")
    check(own, "team-vision has claims")
    shown = browser.wait_for(
        tenant, nonempty("[...document.querySelectorAll('[data-claim]')].map(e => e.dataset.claim)"),
        "the tenant's claims")
    check(sorted(shown) == own, f"the tenant sees exactly its {len(own)} claims")
    browser.screenshot(tenant, os.path.join(out_dir, "tenant-claims.png"))
    for view in ["claims", "pending", "tenants", "overview", "nodes"]:
        browser.evaluate(tenant, f"location.hash = '#/{view}'")
        text = browser.evaluate(tenant, "new Promise(r => setTimeout(() => r(document.body.innerText), 300))")
        check("team-llm" not in text, f"no other tenant's data in the tenant's {view} view")
    check("not shown (403" in text, "cluster-scoped data the tenant may not read is marked as such")

    # Explanations: of its own Pods, naming nothing of another tenant; of another's, refused.
    def explain_as_tenant(pod):
        path = (f"/apis/draplane.dev/v1alpha1/namespaces/{pod['metadata']['namespace']}"
                f"/podexplanations/{pod['metadata']['name']}")
        return browser.evaluate(
            tenant, f"fetch('{path}', {{headers: {{Authorization: 'Bearer ' + state.token}}}})"
                    ".then(async r => ({status: r.status, body: await r.text()}))")
    own_pod = sorted((p for p in pods if p["metadata"]["namespace"] == "team-vision"),
                     key=lambda p: p["metadata"]["name"])[0]
    mine = explain_as_tenant(own_pod)
    check(mine["status"] == 200, f"the tenant may explain its Pod {own_pod['metadata']['name']}")
    check("team-llm" not in mine["body"], "its explanation names nothing of another tenant")
    other_pod = sorted((p for p in pods if p["metadata"]["namespace"] == "team-llm"),
                       key=lambda p: p["metadata"]["name"])[0]
    theirs = explain_as_tenant(other_pod)
    check(theirs["status"] == 403, "the tenant may not explain another tenant's Pod")
finally:
    browser.close()
print("dashboard: all checks passed; screenshots in", out_dir)

#!/usr/bin/env python3
"""The dashboard at scale in a real browser: `draplane serve` (memory store, no scheduler) is
loaded with 500 nodes and 5,000 Pods in 10 namespaces, and headless Chromium (cdp.py) checks that
the pages list them all while drawing one page of rows, that paging and the filter work from the
keyboard, and that the page answers while the watches run. No timed assertions: the waits only
guard against hangs; row counts and page labels are compared exactly.

Usage: scale_test.py DRAPLANE OUT_DIR
"""

import base64
import concurrent.futures
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

NODES, NAMESPACES, PODS_PER_NAMESPACE, PAGE, CREATORS = 500, 10, 500, 50, 4
draplane, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)
work = tempfile.mkdtemp(prefix="draplane-dashboard-scale-")
server = None
browser = None


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def kubectl(*args, stdin=None):
    done = subprocess.run(["kubectl", *args], env=env, input=stdin, text=True,
                          capture_output=True)
    if done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr[-2000:]}")
    return done.stdout


try:
    server = subprocess.Popen(
        [draplane, "serve", "--listen", "127.0.0.1:0", "--data-dir", os.path.join(work, "data"),
         "--store", "memory://", "--no-scheduler", "--no-controller-manager"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "server.log"), "w"), text=True)
    line = server.stdout.readline()
    check(line.startswith("ready: "), "draplane serve is ready")
    url = line.split()[1]
    env = dict(os.environ, KUBECONFIG=line.split("kubeconfig=", 1)[1].strip())

    config = subprocess.run([draplane, "kubeconfig", "--data-dir", os.path.join(work, "data"),
                             "--user", "scale-admin", "--groups", "system:masters"],
                            text=True, check=True, capture_output=True).stdout
    token = next(l.split(":", 1)[1].strip().strip('"') for l in config.splitlines()
                 if l.strip().startswith("token:"))
    ca = next(l.split(":", 1)[1].strip().strip('"') for l in config.splitlines()
              if l.strip().startswith("certificate-authority-data:"))

    # The 5,510 objects go in over the REST API from a few keep-alive connections at once: kubectl
    # would create them one by one (a minute and more under the sanitizers), and what is tested
    # here is the dashboard, not the loading.
    tls = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
    host, port = urllib.parse.urlsplit(url).netloc.rsplit(":", 1)

    def create(batch):
        connection = http.client.HTTPSConnection(host, int(port), context=tls, timeout=120)
        try:
            for path, body in batch:
                connection.request("POST", path, body=json.dumps(body), headers={
                    "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                reply = connection.getresponse()
                text = reply.read()
                if reply.status != 201:
                    raise AssertionError(f"POST {path}: {reply.status} {text[:500]!r}")
        finally:
            connection.close()

    pod = {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    namespaces = [("/api/v1/namespaces", {"metadata": {"name": f"tenant-{n}"}})
                  for n in range(NAMESPACES)]
    objects = [("/api/v1/nodes", {"metadata": {"name": f"node-{i:03d}", "labels": {"scale": "yes"}}})
               for i in range(NODES)]
    objects += [(f"/api/v1/namespaces/tenant-{n}/pods",
                 {"metadata": {"name": f"pod-{n}-{i:03d}", "namespace": f"tenant-{n}"}, **pod})
                for n in range(NAMESPACES) for i in range(PODS_PER_NAMESPACE)]
    create(namespaces)
    with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
        list(pool.map(create, (objects[i::CREATORS] for i in range(CREATORS))))
    pods = NAMESPACES * PODS_PER_NAMESPACE
    check(len(kubectl("get", "pods", "-A", "--no-headers").splitlines()) == pods,
          f"{pods} Pods and {NODES} nodes stored")

    browser = cdp.Browser()
    page = browser.open(f"{url}/dashboard/#token={token}")
    browser.wait_for(page, "document.body?.dataset.loaded === 'true'", "the first lists")

    browser.evaluate(page, "location.hash = '#/pending'")
    label = browser.wait_for(
        page, "document.querySelector('#pending .pager span')?.innerText", "the Pending Pods table")
    check(label == f"page 1 of {pods // PAGE} ({pods} rows)", f"Pending Pods: {label}")
    rows = browser.evaluate(page, "document.querySelectorAll('#pending tbody tr').length")
    check(rows == PAGE, f"one page of {PAGE} rows is drawn, not {pods}")

    # Keyboard: from the filter, Tab reaches Next (Previous is disabled on page 1), Enter pages.
    browser.evaluate(page, "document.querySelector('#pending input[type=search]').focus()")
    browser.key(page, "Tab", "Tab", 9)
    check(browser.evaluate(page, "document.activeElement?.innerText") == "Next ›",
          "Tab moves from the filter to the Next button")
    browser.key(page, "Enter", "Enter", 13, "\r")
    label = browser.wait_for(
        page, "(s => s.startsWith('page 2 ') ? s : null)"
              "(document.querySelector('#pending .pager span')?.innerText || '')", "page 2")
    check(label == f"page 2 of {pods // PAGE} ({pods} rows)", "Enter on Next shows page 2")
    first = browser.evaluate(page, "document.querySelector('#pending tbody tr')?.dataset.pod")
    check(first == f"tenant-0/pod-0-{PAGE:03d}", f"page 2 starts with the 51st Pod ({first})")

    browser.evaluate(page, "document.querySelector('#pending input[type=search]').focus()")
    browser.call("Input.insertText", {"text": "pod-7-123"}, session=page)
    label = browser.wait_for(
        page, "(s => s.endsWith('(1 rows)') ? s : null)"
              "(document.querySelector('#pending .pager span')?.innerText || '')", "the filter")
    check(browser.evaluate(page, "document.querySelector('#pending tbody tr')?.dataset.pod")
          == "tenant-7/pod-7-123", "the filter finds one Pod among 5,000, focus kept in the filter")
    check(browser.evaluate(page, "document.activeElement?.dataset.filter") == "pending",
          "the filter keeps the keyboard focus")
    browser.evaluate(page, "document.activeElement.select()")
    browser.key(page, "Backspace", "Backspace", 8)
    label = browser.wait_for(
        page, f"(s => s.includes('({pods} rows)') ? s : null)"
              "(document.querySelector('#pending .pager span')?.innerText || '')",
        "the cleared filter")
    check(label == f"page 1 of {pods // PAGE} ({pods} rows)", "Backspace clears the filter")

    browser.evaluate(page, "location.hash = '#/nodes'")
    label = browser.wait_for(
        page, "(s => s.includes('rows') ? s : null)"
              "(document.querySelector('.pager span')?.innerText || '')", "the node table")
    check(label == f"page 1 of {NODES // PAGE} ({NODES} rows)", f"nodes: {label}")
    check(browser.evaluate(page, "document.querySelectorAll('[data-node]').length") == PAGE,
          f"one page of {PAGE} nodes is drawn")

    # Still live: a Pod created now appears through the watch.
    kubectl("create", "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "tenant-0"},
         "spec": {"containers": [{"name": "main", "image": "busybox"}]}}))
    browser.evaluate(page, "location.hash = '#/pending'")
    label = browser.wait_for(
        page, f"(s => s.includes('({pods + 1} rows)') ? s : null)"
              "(document.querySelector('#pending .pager span')?.innerText || '')",
        "the new Pod through the watch", timeout=120)
    browser.screenshot(page, os.path.join(out_dir, "scale-pending.png"))
    print("dashboard scale: all checks passed")
finally:
    if browser:
        browser.close()
    if server:
        server.terminate()  # only the server this test started
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    shutil.rmtree(work, ignore_errors=True)

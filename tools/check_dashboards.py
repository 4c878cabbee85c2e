#!/usr/bin/env python3
"""Checks the Grafana dashboards in examples/dashboards/: valid JSON, and every metric and every
grouping label their queries use is one draplane registers (found in the sources where the family
is registered: the name as a string literal, then its list of label names). Catches a renamed
metric or label before a user's dashboard goes blank.

Usage: check_dashboards.py REPO_ROOT
"""

import glob
import json
import os
import re
import sys

root = sys.argv[1]
sources = ""
for path in glob.glob(os.path.join(root, "src", "**", "*.cc"), recursive=True):
    if path.endswith("_test.cc"):
        continue
    with open(path) as f:
        sources += f.read()


def labels_of(metric):
    """The label names registered with `metric`, or None when it is not registered."""
    at = sources.find(f'"{metric}"')
    if at < 0:
        return None
    m = re.compile(r'\{((?:\s*"[a-z_]*"\s*,?)*)\}').search(sources, at)
    return set(re.findall(r'"([a-z_]*)"', m.group(1))) if m else set()


errors = []
files = sorted(glob.glob(os.path.join(root, "examples", "dashboards", "*.json")))
if not files:
    errors.append("no dashboards in examples/dashboards")
for path in files:
    with open(path) as f:
        dashboard = json.load(f)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dashboard.get("templating", {}).get("list", [])
              if isinstance(v.get("query"), dict)]
    for expr in exprs:
        metrics = set()
        for name in re.findall(r"\b((?:apiserver|scheduler|draplane)_[a-z_]+)", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            labels = labels_of(base)
            if labels is None:
                errors.append(f"{os.path.basename(path)}: unknown metric {name} in {expr}")
                continue
            metrics.add(base)
            for selector in re.findall(re.escape(name) + r"\{([^}]*)\}", expr):
                for label in re.findall(r"([a-z_]+)\s*[=!]~?", selector):
                    if label not in labels:
                        errors.append(f"{os.path.basename(path)}: {name} has no label {label}")
        known = set().union(*(labels_of(m) for m in metrics)) | {"le"} if metrics else {"le"}
        for group in re.findall(r"by \(([^)]*)\)", expr):
            for label in (l.strip() for l in group.split(",")):
                if label not in known:
                    errors.append(f"{os.path.basename(path)}: grouping by unknown label {label} "
                                  f"in {expr}")
for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"{len(files)} dashboard(s) checked")

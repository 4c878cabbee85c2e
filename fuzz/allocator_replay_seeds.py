#!/usr/bin/env python3
# Writes the hand-made `V` seeds of allocator_replay_fuzz (fuzz/corpus/allocator_replay_fuzz/):
# each spells out, choice by choice, an input that walks into one of the accounting corners of
# kubernetes#140433 / #140797 or KEP-5963, so the regression run of `ctest --preset fuzz` covers
# them on every run. The encoding mirrors allocator_replay_fuzz.cc's reads; keep both in step.
# Usage: fuzz/allocator_replay_seeds.py fuzz/corpus/allocator_replay_fuzz
import sys


# FuzzedDataProvider takes integral values from the end of the data: one byte for a range below
# 256, none for an empty range. A `V` in front selects the target's extended reading.
class Seed:
    def __init__(s): s.bytes = []
    def int(s, lo, hi, v):
        assert lo <= v <= hi
        if hi - lo == 0: return
        s.bytes.append(v - lo)
    def bool(s, v): s.bytes.append(1 if v else 0)
    def data(s, extended=True):
        return (b'V' if extended else b'') + bytes(reversed(s.bytes))

def features(s, admin=0, part=1, taints=0, capacity=1, binding=0, lists=0, compat=0, upstream=1):
    for v in (admin, part, taints, capacity, binding, lists, compat, upstream): s.bool(v)

def pool(s, counters, node=0, devices=()):
    s.int(0, 6, 0)
    s.bool(counters); s.int(0, 4, 1); s.int(0, 2, node)
    if counters:
        s.int(1, 6, counters[0]); s.int(1, 6, counters[1])
    s.int(1, 5, len(devices))
    for d in devices:
        s.int(0, 1, 0); s.bool(1); s.int(0, 2, 0); s.int(0, 3, 1)
        if counters:
            s.bool(d.get('consumes') is not None)
            if d.get('consumes') is not None:
                a, b = d['consumes']
                s.bool(a > 0)
                if a > 0: s.int(1, 4, a)
                s.bool(b > 0)
                if b > 0: s.int(1, 4, b)
                s.int(0, 3, d.get('groups', 0))
        multi = d.get('multi', False)
        s.int(0, 2, 0 if multi else 1)
        if multi:
            s.int(2, 8, 2); s.bool(0); s.bool(d.get('capacity', False))
        s.int(0, 4, 1)

def request(s, cls=0, admin_feature=False, admin=False, capacity_feature=True):
    s.int(0, 3, 1)                # exactly
    s.int(0, 2, cls); s.int(0, 5, 1); s.int(1, 3, 1); s.int(0, 3, 1)
    if capacity_feature: s.int(0, 2, 1)
    if admin_feature: s.int(0, 5, 0 if admin else 1)

def allocate(s, claims, node=0):
    s.int(0, 6, 2)
    s.int(1, 2, len(claims))
    for reqs in claims:
        s.int(1, 3, len(reqs))
        for r in reqs: request(s, **r)
        s.int(0, 2, 1)            # no constraint
    s.int(0, 2, node); s.bool(0)

def flip(s):
    s.int(0, 6, 6)                # one pool, one device: no bytes for the picks

out = sys.argv[1]
# kubernetes#140433: one shared device (share ID only) consumes all of its pool's counters; the
# Pod's second claim shares it too. Once the first share is recorded by its ID, the second must
# still fit.
s = Seed(); features(s)
pool(s, counters=(2, 2), devices=[{'consumes': (2, 2), 'multi': True}])
allocate(s, [[{}], [{}]])
open(out + '/persisted-share-counters-140433', 'wb').write(s.data())
# The same with two devices' worth of counters split over both counters.
s = Seed(); features(s)
pool(s, counters=(3, 1), devices=[{'consumes': (3, 1), 'multi': True}, {'consumes': (0, 1)}])
allocate(s, [[{}], [{}]])
open(out + '/persisted-share-counters-140433-two-devices', 'wb').write(s.data())
# kubernetes#140797: a share of a device is live, the driver turns allowMultipleAllocations off,
# a dedicated request must not get the device.
s = Seed(); features(s, part=0)
pool(s, counters=None, devices=[{'multi': True}])
allocate(s, [[{}]])
flip(s)
allocate(s, [[{}]])
open(out + '/dedicated-over-live-share-140797', 'wb').write(s.data())
# Compatibility groups: a grouped device allocated, an ungrouped one on the same counter set
# must wait (KEP-5963).
s = Seed(); features(s, compat=1, upstream=0)
pool(s, counters=(4, 4), devices=[{'consumes': (1, 1), 'groups': 1}, {'consumes': (1, 1)}])
allocate(s, [[{}]])
allocate(s, [[{}]])
open(out + '/compatibility-groups-ungrouped-after-grouped', 'wb').write(s.data())

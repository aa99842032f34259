#!/usr/bin/python3
"""bench-peers's reading of its rounds (scripts/peers/rounds.py): the paired
ratio and the near/far limit of the cores' round trip.

usage: test_rounds.py SRC
"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "scripts", "peers"))
import rounds  # noqa: E402

failures = 0


def check(what, got, want, tol=0.5):
    global failures
    ok = (got is None and want is None) or (got is not None and want is not None and abs(got - want) <= tol)
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got} (want {want})")
    failures += not ok


# each round's own ratio, not the medians' (2 / 5 here: the two medians come from different rounds)
check("paired ratio, drifting rounds", rounds.paired_ratio([1, 10, 10], [2, 20, 5]), 0.5, 1e-12)
check("paired ratio, one round", rounds.paired_ratio([3], [4]), 0.75, 1e-12)
# the Zen 4 VM's three levels: the split between ~65 and ~300, not at twice the lowest
check("28, 65, 66, 300, 310 ns", rounds.near_limit([28, 65, 66, 300, 310]), (66 * 300) ** 0.5)
check("the Zen 5's 80 and 365 ns", rounds.near_limit([80, 365, 80]), (80 * 365) ** 0.5)
check("28 and 65 ns: no gap threefold", rounds.near_limit([28, 65, 64]), None)
check("unknown round trips (0) and one level", rounds.near_limit([0, 0, 70, 70]), None)
check("none known", rounds.near_limit([]), None)
sys.exit(1 if failures else 0)

"""rounds.py: how bench-peers reads its interleaved rounds. No dependencies, so
that tests/models/test_rounds.py can check it without PyTorch or onnxruntime."""
import statistics


def paired_ratio(ours, theirs):
    """The median over rounds of each round's ours / theirs. Paired by round because a VM's speed drifts
    between rounds: the ratio of the two medians can take them from different rounds (2026-11-27, mnist_cnn
    at batch 1: 0.0333 / 0.0304 ms, 1.09, where each round's own ratio was 0.55 or 0.69)."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


def near_limit(trips_ns):
    """The round trip (ns) under which a round counts as near: the geometric middle of the widest gap
    between the sorted round trips, where one is at least 3 times the one below it; None where there is no
    such gap. The Zen 4 VM showed three levels, ~28, ~65 and ~300 ns, and "twice the lowest" (the rule
    before) put its 65 ns rounds with the 300 ns ones (2026-11-28)."""
    known = sorted({t for t in trips_ns if t > 0})
    ratio, near = max(((b / a, (a * b) ** 0.5) for a, b in zip(known, known[1:])), default=(0, None))
    return near if ratio >= 3 else None

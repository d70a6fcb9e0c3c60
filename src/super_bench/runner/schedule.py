"""The order in which a run with several workers hands out its tasks, planned from how long each took before.

Each worker takes the next task in the queue when it frees, so the queue's order is the whole plan. Longest first
(LPT) is the classic order, but with a handful of tasks of similar length it can end with one worker still on a
task while the other has long been idle: nine demo tasks on two workers end at 2.72 s by longest first against 2.55
s for the best split. So the plan starts from longest first and then moves or swaps tasks between the busiest
worker and another while that ends the run sooner by the estimates; each worker's tasks stay longest first, and the
queue takes them in the order they are to start, so that workers taking the next task as they free follow the plan.
Where the estimates are wrong the queue is still a sensible order. The plan is kept only where, simulated, it ends
at least ``GAIN`` (2%) sooner than longest first; its work is bounded (a fixed number of rounds, each O(n log n)):
0.05 s for 5,000 tasks on 16 workers."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence

ROUNDS = 64  # improvements tried at most; each shortens the busiest worker's share
# How much sooner than longest first the plan must end, by the estimates, to be used. A task's time varies from run
# to run; longest first, which leaves the short tasks to the end, absorbs that better than a tight plan, so a plan
# that gains less than this loses as often as it wins (simulated with times off by up to 40%: tests/runner/
# test_schedule.py).
GAIN = 0.02
_EPSILON = 1e-9


def finish(order: Sequence[int], seconds: Sequence[float], workers: int) -> float:
    """When the last task ends if ``workers`` take the tasks of ``order`` as they free, each as long as its
    estimate."""
    return max(sum(seconds[i] for i in share) for share in _assign(order, seconds, max(1, workers)))


def plan(seconds: Sequence[float], workers: int) -> list[int]:
    """The indices of ``seconds`` in the order to hand them out to ``workers``: longest first, balanced."""
    longest = sorted(range(len(seconds)), key=lambda i: -seconds[i])  # stable: ties keep the order given
    if workers < 2 or len(seconds) <= workers:
        return longest
    shares = _balance(_assign(longest, seconds, workers), seconds)
    planned = _by_start(shares, seconds)
    if finish(planned, seconds, workers) * (1 + GAIN) <= finish(longest, seconds, workers):
        return planned
    return longest


def _assign(order: Sequence[int], seconds: Sequence[float], workers: int) -> list[list[int]]:
    """Each worker's tasks when they take ``order`` as they free."""
    shares: list[list[int]] = [[] for _ in range(workers)]
    free = [(0.0, w) for w in range(workers)]
    for i in order:
        at, w = heapq.heappop(free)
        shares[w].append(i)
        heapq.heappush(free, (at + seconds[i], w))
    return shares


def _balance(shares: list[list[int]], seconds: Sequence[float]) -> list[list[int]]:
    """Move a task from the busiest worker to another, or swap one of each, where that lowers the larger of
    the two shares the most; until no move lowers the busiest share."""
    loads = [sum(seconds[i] for i in share) for share in shares]
    for _ in range(ROUNDS):
        busiest = max(range(len(shares)), key=loads.__getitem__)
        best: tuple[float, int, int, int | None] | None = None  # (new peak, other worker, task out, task in)
        for other, share in enumerate(shares):
            gap = loads[busiest] - loads[other]
            if other == busiest or gap <= _EPSILON:
                continue
            # A task of the other worker's (or none: a move) to trade for each of the busiest's: the trade
            # that shifts closest to half the gap evens the two best.
            values = sorted([(0.0, -1)] + [(seconds[j], j) for j in share])
            keys = [v for v, _ in values]
            for i in shares[busiest]:
                at = bisect.bisect_left(keys, seconds[i] - gap / 2)
                for value, j in values[max(0, at - 1) : at + 1]:
                    shift = seconds[i] - value
                    if _EPSILON < shift < gap - _EPSILON:
                        peak = max(loads[busiest] - shift, loads[other] + shift)
                        if best is None or peak < best[0] - _EPSILON:
                            best = (peak, other, i, None if j < 0 else j)
        if best is None:
            break
        _, other, out, into = best
        shares[busiest].remove(out)
        shares[other].append(out)
        shift = seconds[out]
        if into is not None:
            shares[other].remove(into)
            shares[busiest].append(into)
            shift -= seconds[into]
        loads[busiest] -= shift
        loads[other] += shift
    return shares


def _by_start(shares: list[list[int]], seconds: Sequence[float]) -> list[int]:
    """The tasks in the order they start when each worker runs its share longest first."""
    starts: list[tuple[float, float, int]] = []  # tasks that start together go longest first
    for share in shares:
        at = 0.0
        for i in sorted(share, key=lambda i: (-seconds[i], i)):
            starts.append((at, -seconds[i], i))
            at += seconds[i]
    return [i for _, _, i in sorted(starts)]

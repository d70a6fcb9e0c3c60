"""Confidence intervals by bootstrap over tasks, of a mean and of a paired difference of means, and an
exact paired test of a difference that stays valid on few tasks."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from super_bench._pydantic import Model

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
# Fewer paired tasks than this and no difference can be significant at 5%: the smallest two-sided
# p-value of an exact paired test on 5 tasks is 2 / 2**5 = 0.0625. Below it, a comparison says
# "too few paired tasks" and its interval is the whole range of a difference of scores, [-1, 1].
MIN_PAIRED = 6
SIGNIFICANCE = 0.05
METRIC_RANGE = (-1.0, 1.0)  # scores are in [0, 1], so their differences are in [-1, 1]
EXACT_LIMIT = 1 << 12  # distinct sums kept by the exact test before it samples sign flips instead
PERMUTATION_RESAMPLES = 20000
# Scores are fractions with small denominators (k of n landmarks, a mean over epochs): read each float
# back as the nearest fraction with a denominator at most this, exactly that fraction for any n up to it.
SCORE_DENOMINATOR = 10**6


class Estimate(Model):
    """A mean over ``n`` tasks with its bootstrap interval (``low``, ``high``); None where n is 0."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    level: float = 0.95

    def excludes_zero(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def bootstrap_mean(
    values: Sequence[float], *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> Estimate:
    """The mean and its percentile bootstrap interval, resampling tasks with replacement.

    Seeded, so the same run always reports the same interval."""
    if len(values) == 0:
        return Estimate(mean=None, low=None, high=None, n=0, level=level)
    if len(values) == 1:  # every resample is the one value; and a one-task run need not import numpy
        only = float(values[0])
        return Estimate(mean=only, low=only, high=only, n=1, level=level)
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    # Resampling n tasks with replacement draws each distinct value a multinomial number of times,
    # so drawing those counts is the same bootstrap. Scores take few distinct values (0 and 1, a
    # few landmark fractions): resamples x distinct values instead of resamples x tasks.
    levels, counts = np.unique(data, return_counts=True)
    draws = rng.multinomial(data.size, counts / data.size, size=resamples)
    means = draws @ levels / data.size
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Estimate(mean=float(data.mean()), low=float(low), high=float(high), n=int(data.size), level=level)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Estimate:
    """The mean of ``b - a`` over paired tasks, resampling the pairs (so task difficulty cancels out)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    differences = [float(y) - float(x) for x, y in zip(a, b, strict=True)]
    estimate = bootstrap_mean(differences, level=level, resamples=resamples, seed=seed)
    if 0 < estimate.n < MIN_PAIRED:
        # A bootstrap of one task is that task: an interval of a point. Too few pairs rule nothing out.
        estimate.low, estimate.high = METRIC_RANGE
    return estimate


def paired_permutation_test(
    a: Sequence[float], b: Sequence[float], *, resamples: int = PERMUTATION_RESAMPLES, seed: int = DEFAULT_SEED
) -> float | None:
    """Two-sided p-value of the paired sign-flip permutation test that ``b - a`` has mean 0; None under
    ``MIN_PAIRED`` pairs.

    Under the null each difference is as likely positive as negative, so the p-value is the share of
    the 2**n ways of flipping the differences' signs whose sum is at least as far from 0 as the one
    observed. It is counted exactly, ties included, in integer arithmetic on the scores read as
    fractions (scores take few distinct values, so the sums do too), and
    estimated from ``resamples`` seeded random flips only when there are more than ``EXACT_LIMIT``
    distinct sums. Valid for any number of tasks, unlike a bootstrap or a normal approximation.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    if len(a) < MIN_PAIRED:
        return None
    signed = _exact_differences(a, b)
    steps = [abs(d) for d in signed if d]
    observed = abs(sum(signed))
    if not steps:
        return 1.0
    sums: Counter[int] = Counter({0: 1})
    for step in steps:
        flipped: Counter[int] = Counter()
        for total, count in sums.items():
            flipped[total + step] += count
            flipped[total - step] += count
        sums = flipped
        if len(sums) > EXACT_LIMIT:
            return _sampled_p(steps, observed, resamples, seed)
    extreme = sum(count for total, count in sums.items() if abs(total) >= observed)
    return float(extreme / 2 ** len(steps))


def _exact_differences(a: Sequence[float], b: Sequence[float]) -> list[int]:
    """The differences ``b - a`` as integers on one common denominator, so that sums compare exactly.

    Each score is read as the nearest fraction with a denominator of at most ``SCORE_DENOMINATOR``:
    a landmark fraction such as 2/3, stored as a float, is 2/3 again, and 2/3 - 1/3 equals 1/3. A grid
    of rounded decimals would not do: 1/3 + 1/3 and 2/3 round to sums one unit apart, and ties are lost."""
    differences = [
        Fraction(y).limit_denominator(SCORE_DENOMINATOR) - Fraction(x).limit_denominator(SCORE_DENOMINATOR)
        for x, y in zip(a, b, strict=True)
    ]
    common = math.lcm(*(d.denominator for d in differences)) if differences else 1
    return [d.numerator * (common // d.denominator) for d in differences]


def _sampled_p(steps: list[int], observed: int, resamples: int, seed: int) -> float:
    import numpy as np

    signs = np.random.default_rng(seed).choice(np.array([-1, 1], dtype=np.int64), size=(resamples, len(steps)))
    if max(steps) * len(steps) < 1 << 62:  # sums fit in int64: exact
        hits = int((np.abs(signs @ np.asarray(steps, dtype=np.int64)) >= observed).sum())
    else:  # denominators too many to share one in int64: Python's integers, row by row
        hits = sum(abs(sum(int(s) * step for s, step in zip(row, steps))) >= observed for row in signs.tolist())
    return (hits + 1) / (resamples + 1)  # counting the observed flip itself: never 0


class ExactSum:
    """A sum of numbers added one at a time, exact until it is read (``value``, correctly rounded), so that it is
    the same whatever order the numbers came in: a run's figures add up the same however its tasks finished.
    Floats are kept as Shewchuk's partials, as ``math.fsum`` keeps them (a few floats, whatever the count); whole
    numbers as one, so that a sum of counts is the count it is."""

    __slots__ = ("_partials", "_whole")

    def __init__(self) -> None:
        self._partials: list[float] = []
        self._whole = 0

    def add(self, number: float) -> None:
        if isinstance(number, int):
            self._whole += number
            return
        x, kept = number, 0
        for partial in self._partials:
            y = partial
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            low = y - (high - x)
            if low:
                self._partials[kept] = low
                kept += 1
            x = high
        self._partials[kept:] = [x]

    @property
    def value(self) -> float:
        if not self._partials:
            return self._whole
        return math.fsum([*self._partials, self._whole])

"""Confidence intervals by bootstrap over tasks: of a mean, and of a paired difference of means."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


class Estimate(BaseModel):
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
    return bootstrap_mean(differences, level=level, resamples=resamples, seed=seed)

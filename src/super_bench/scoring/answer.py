"""Output match: how well a submitted answer matches the gold answer.

``corrected`` (default) compares the submission against the gold: dicts are averaged over
the gold's keys (missing keys score 0, extra keys are ignored; a key matches whether it is written
as an integer or as a string, since JSON has string keys only), lists element-wise over the
gold's length. ``reference`` reproduces the SUPER reference harness exactly: it compared only a
truthy submission (``0``, ``0.0``, ``""``, ``[]``, ``{}`` and null were "not submitted" and score
0), and called its comparison with the two arguments swapped: a dict submission is averaged over
*its own* keys (so a partial answer can score full marks and extra keys are penalised), lists
over the submission's length, and the orientation flips again inside nested dicts; keys match
only when equal in type too (``22896`` is not ``"22896"``). Where the reference raised (an empty
submission list or dict, a boolean, a null), reference mode scores 0.

Shared rules: ints compare as floats; floats match within an absolute 1e-2 (strictly less);
strings match after stripping whitespace; a type mismatch scores 0.

Scoring is total: any JSON value, on either side, gets a score. Integers beyond a float's range are
compared exactly in corrected mode (the reference raised on them: 0 in reference mode). Only a pair
nested deeper than Python can follow raises ``UnscorableError``, whose message is the row's reason.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from super_bench._names import ScoreMode
from super_bench.errors import UnscorableError
from super_bench.scoring.submission import json_key

FLOAT_EPSILON = 1e-2


class _ReferenceCrash(Exception):
    """Where the reference implementation would have raised."""


def score_answer(submission: Any, gold: Any, mode: ScoreMode = "corrected", epsilon: float = FLOAT_EPSILON) -> float:
    """Output-match score in [0, 1] of ``submission`` against ``gold``; ``UnscorableError`` where the two are
    nested too deeply to compare."""
    if mode not in ("corrected", "reference"):
        raise ValueError(f"unknown scoring mode {mode!r}; use 'corrected' or 'reference'")
    try:
        if mode == "corrected":
            return _corrected(submission, gold, epsilon)
        if not submission:
            return 0.0  # the reference scored a falsy submission as no submission at all
        try:
            # The reference harness ran evaluate(gold, submission) against evaluate(predicted, gold).
            return _reference(gold, submission, epsilon)
        except (_ReferenceCrash, OverflowError):  # OverflowError: float() of an integer beyond its range
            return 0.0
    except RecursionError:
        raise UnscorableError("the submission and the gold answer are nested too deeply to compare") from None


def _as_number(value: Any) -> Any:
    return float(value) if type(value) is int else value


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _close(a: int | float, b: int | float, eps: float) -> bool:
    """Whether two numbers differ by less than ``eps``; an integer too large for a float exactly."""
    try:
        return abs(float(a) - float(b)) < eps
    except OverflowError:
        if (isinstance(a, float) and not math.isfinite(a)) or (isinstance(b, float) and not math.isfinite(b)):
            return False
        return abs(Fraction(a) - Fraction(b)) < Fraction(eps)


def _corrected(submission: Any, gold: Any, eps: float) -> float:
    if _is_number(submission) and _is_number(gold):
        return float(_close(submission, gold, eps))
    if type(submission) is not type(gold):
        return 0.0
    if isinstance(gold, dict):
        if not gold:
            return float(submission == gold)
        keyed = {json_key(k): v for k, v in submission.items()}
        return sum(_corrected(keyed.get(json_key(k)), v, eps) for k, v in gold.items()) / len(gold)
    if isinstance(gold, list):
        if not gold:
            return float(submission == gold)
        return sum(_corrected(s, g, eps) for s, g in zip(submission, gold)) / len(gold)
    if isinstance(gold, str):
        return float(submission.strip() == gold.strip())
    return float(submission == gold)  # booleans and null


def _reference(predicted: Any, gold: Any, eps: float) -> float:
    """The reference's ``evaluate(predicted, gold)``, called by it as evaluate(gold, submission)."""
    predicted, gold = _as_number(predicted), _as_number(gold)
    if type(gold) is not type(predicted):
        return 0.0
    if isinstance(gold, list):
        if not gold:
            raise _ReferenceCrash("Gold is empty")
        return sum(_reference(p, g, eps) for p, g in zip(predicted, gold)) / len(gold)
    if isinstance(gold, dict):
        if not gold:
            raise _ReferenceCrash("Gold is empty")
        # Arguments swapped once more here: evaluate(gold_value, predicted.get(key)).
        return sum(_reference(v, predicted.get(k), eps) for k, v in gold.items()) / len(gold)
    if isinstance(gold, str):
        return float(predicted.strip() == gold.strip())
    if isinstance(gold, float):
        return float(abs(predicted - gold) < eps)
    raise _ReferenceCrash(f"unsupported type {type(gold).__name__}")

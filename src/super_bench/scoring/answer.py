"""Output match: how well a submitted answer matches the gold answer.

``corrected`` (default) compares the submission against the gold: dicts are averaged over
the gold's keys (missing keys score 0, extra keys are ignored; a key matches whether it is written
as an integer or as a string, since JSON has string keys only), lists element-wise over the
longer list's length (an extra element fails); numeric strings compare as numbers, NaN equals NaN,
strings compare stripped and case-insensitively, and a percentage given for a fraction (or the
reverse) is noted as a format mismatch (docs/scoring.md has the table).
``reference`` reproduces the SUPER reference harness exactly: it compared only a
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

import json
import math
import re
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


def compare_answer(
    submission: Any, gold: Any, *, epsilon: float = FLOAT_EPSILON, percentages: bool = False
) -> tuple[float, list[str]]:
    """Corrected mode's score, and its format mismatches (a percentage given for a fraction, or the reverse:
    scored 0, unless ``percentages`` accepts either form); ``UnscorableError`` as ``score_answer``."""
    comparison = Comparison(epsilon, percentages)
    try:
        return comparison.score(submission, gold), comparison.format_mismatches
    except RecursionError:
        raise UnscorableError("the submission and the gold answer are nested too deeply to compare") from None


def _corrected(submission: Any, gold: Any, eps: float) -> float:
    return Comparison(eps, percentages=False).score(submission, gold)


_INTEGER = re.compile(r"[-+]?[0-9]+")
_NUMERIC = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:nan|inf|infinity)", re.I)


class Comparison:
    """One corrected comparison: the notes it makes on the way (``format_mismatches``: where a percentage was
    given for a fraction, or the reverse), and whether the task accepts either form."""

    def __init__(self, eps: float, percentages: bool) -> None:
        self.eps, self.percentages = eps, percentages
        self.format_mismatches: list[str] = []

    def score(self, submission: Any, gold: Any, path: str = "") -> float:
        number, percent = _numeric(submission)
        gold_number, _ = _numeric(gold)
        if number is not None and gold_number is not None:
            return self._numbers(number, gold_number, percent, path, submission)
        if isinstance(gold, str) and isinstance(submission, str):
            # Case and surrounding whitespace carry no meaning in an answer ("Positive" is "positive").
            return float(submission.strip().casefold() == gold.strip().casefold())
        if type(submission) is not type(gold):
            return 0.0
        if isinstance(gold, dict):
            if not gold:
                return float(submission == gold)
            keyed = {json_key(k): v for k, v in submission.items()}
            return sum(self.score(keyed.get(json_key(k)), v, _place(path, k)) for k, v in gold.items()) / len(gold)
        if isinstance(gold, list):
            if not gold:
                return float(submission == gold)
            # Over the longer of the two: an element the gold does not have is a wrong one.
            found = sum(self.score(s, g, f"{path}[{i}]") for i, (s, g) in enumerate(zip(submission, gold)))
            return found / max(len(gold), len(submission))
        return float(submission == gold)  # booleans and null

    def _numbers(self, number: float | int, gold: float | int, percent: bool, path: str, shown: Any) -> float:
        if _same(number, gold, self.eps):
            return 1.0
        for scale, told in _SCALES:
            if scale > 1 and percent:
                continue
            try:
                if not math.isfinite(number):
                    break
                scaled = float(Fraction(number) * scale)
            except OverflowError:
                continue
            if _same(scaled, gold, self.eps) and not _same(number, 0, self.eps):
                where = f" at {path}" if path else ""
                self.format_mismatches.append(f"{told}{where}: {json.dumps(shown)} against the gold {gold!r}")
                return 1.0 if self.percentages else 0.0
        return 0.0


_SCALES = (
    (Fraction(1, 100), "a percentage given for a fraction"),
    (Fraction(100), "a fraction given for a percentage"),
)


def _place(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _numeric(value: Any) -> tuple[float | int | None, bool]:
    """A number and whether it was written as a percentage: a JSON number, or a string that writes one
    (``"0.5"``, ``" 85.2% "``, ``"NaN"``); None for anything else."""
    if type(value) is int or type(value) is float:
        return value, False
    if not isinstance(value, str) or len(value) > 64:
        return None, False
    text = value.strip()
    percent = text.endswith("%")
    text = text.removesuffix("%").strip() if percent else text
    if not _NUMERIC.fullmatch(text):
        return None, False
    return (int(text) if _INTEGER.fullmatch(text) else float(text)), percent


def _same(a: float | int, b: float | int, eps: float) -> bool:
    """Equal within ``eps``; NaN equals NaN, and an infinity the infinity of the same sign."""
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    if (isinstance(a, float) and math.isinf(a)) or (isinstance(b, float) and math.isinf(b)):
        return a == b
    return _close(a, b, eps)


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

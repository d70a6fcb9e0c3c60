"""What an episode submitted: the answer of its final submit, read back exactly as it was given.

A submission recorded as Python source (the published notebooks print answers with ``str()``, so
``{22896: 9}`` has integer keys) is kept as that text beside the step (``ANSWER_LITERAL`` in its
metadata) and parsed again whenever the trajectory is scored: saved as JSON, the integer keys would
turn into strings and re-scoring would no longer agree with the score given at import.
"""

from __future__ import annotations

import ast
import json
from typing import TYPE_CHECKING, Any

from super_bench.actions import parse_answer as read_submission

if TYPE_CHECKING:
    from super_bench.trajectory import Trajectory

ANSWER_LITERAL = "answer_literal"


def parse_answer(text: str) -> Any:
    """A submitted answer: JSON, else a Python literal (``{'a': 1}``, ``None``), else the text itself."""
    text = text.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def json_key(key: Any) -> str:
    """A dict key as JSON writes it: ``22896`` becomes ``"22896"``, ``True`` becomes ``"true"``."""
    if isinstance(key, str):
        return utf8_text(key)
    try:
        return json.dumps(key)
    except (TypeError, ValueError):
        return repr(key)


def utf8_text(text: str) -> str:
    """``text``, with any lone surrogate (which no UTF-8 file can hold: a Python literal ``'\\ud800'`` read
    back) written out as its escape, ``\\ud800``."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def json_safe(value: Any) -> Any:
    """``value`` with only JSON types that a UTF-8 file can hold: keys as JSON writes them, tuples and sets
    as lists, lone surrogates escaped (``utf8_text``), anything else JSON has no type for (complex numbers,
    bytes, ``...``) as its Python text."""
    if isinstance(value, str):
        return utf8_text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {json_key(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return utf8_text(repr(value))


def submission_of(trajectory: Trajectory) -> Any:
    """The answer the agent submitted, or None: the last action must be an accepted submit."""
    if not trajectory.submitted or not trajectory.steps:
        return None
    last = trajectory.steps[-1]
    if last.action.type != "submit" or last.outcome == "invalid":
        return None
    literal = last.metadata.get(ANSWER_LITERAL)
    if isinstance(literal, str):
        return parse_answer(literal)
    if isinstance(last.action.content, str) and _non_finite(trajectory.submission):
        # The submission as the agent wrote it: JSON files hold no NaN or infinity (the trajectory kept null
        # in their place), the agent's text does, and scoring it again must give the score it got online.
        try:
            return read_submission(last.action.content)
        except ValueError:
            pass
    return trajectory.submission


def _non_finite(value: Any) -> bool:
    """Whether ``value`` may have held a NaN or an infinity before JSON wrote it: null somewhere in it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False

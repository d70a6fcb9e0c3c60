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
        return key
    try:
        return json.dumps(key)
    except (TypeError, ValueError):
        return repr(key)


def json_safe(value: Any) -> Any:
    """``value`` with only JSON types: keys as JSON writes them, tuples and sets as lists, anything
    else JSON has no type for (complex numbers, bytes, ``...``) as its Python text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {json_key(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return repr(value)


def submission_of(trajectory: Trajectory) -> Any:
    """The answer the agent submitted, or None: the last action must be an accepted submit."""
    if not trajectory.submitted or not trajectory.steps:
        return None
    last = trajectory.steps[-1]
    if last.action.type != "submit" or last.outcome == "invalid":
        return None
    literal = last.metadata.get(ANSWER_LITERAL)
    return parse_answer(literal) if isinstance(literal, str) else trajectory.submission

"""Agent actions: one notebook cell, a file edit, a submission, or a reaction to a timeout."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Literal

from pydantic import ConfigDict, ValidationError

from super_bench._pydantic import Model
from super_bench.errors import SuperBenchError

ActionType = Literal["execute", "edit", "submit", "interrupt", "continue_wait"]
ACTION_TYPES: tuple[str, ...] = ("execute", "edit", "submit", "interrupt", "continue_wait")

# Bounds on what an agent hands over. An action is kept in the trajectory, and JSON readers refuse
# deep nesting (pydantic's at about 200 levels, counted from the trajectory's top, Python's at about
# 1000), so content nested deeper could be written but never read back. Gold answers are a few
# levels deep and a few hundred characters long.
MAX_CONTENT_DEPTH = 64
MAX_ANSWER_CHARS = 1_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")


class Action(Model):
    """``{"type": ..., "content": ...}``: for ``execute`` a cell, for ``edit`` the SUPER edit
    text, for ``submit`` the answer (a JSON value, or JSON text to be parsed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ActionType
    content: Any = None

    @classmethod
    def execute(cls, code: str) -> Action:
        return cls(type="execute", content=code)

    @classmethod
    def submit(cls, answer: Any) -> Action:
        return cls(type="submit", content=answer)

    @classmethod
    def coerce(cls, value: Any) -> Action:
        """An Action from an Action, a ``{"type", "content"}`` dict, or its JSON text."""
        if isinstance(value, Action):
            return value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise SuperBenchError(f"not an action: {value[:80]!r} is not JSON ({e.msg})") from e
            except (RecursionError, ValueError) as e:
                reason = "it is nested too deeply" if isinstance(e, RecursionError) else str(e)
                raise SuperBenchError(f"not an action: {value[:80]!r} cannot be read ({reason})") from e
        if isinstance(value, dict) and "action" in value and "type" not in value:
            value = value["action"]  # {"action": {...}, "observation": ...} records
        try:
            return cls.model_validate(value)
        except ValidationError as e:
            raise SuperBenchError(
                f"not an action: {str(value)[:80]!r}; expected {{'type': one of {', '.join(ACTION_TYPES)}, "
                f"'content': ...}} ({e.errors()[0]['msg']})"
            ) from e


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (``"\\ud800"``: JSON and Python strings can hold one, UTF-8 cannot, so
    no file or JSON writer takes it) replaced by U+FFFD; a valid surrogate pair becomes its character."""
    if text.isascii() or not _SURROGATE.search(text):  # looked for, not encoded: a text may be 100 MB
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def valid_texts(value: Any) -> Any:
    """``value`` with every string in it (dict keys too, through lists, tuples and dicts) made ``valid_text``:
    what a model or an agent hands over is kept, a lone surrogate as U+FFFD, rather than refused."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_texts(k): valid_texts(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(valid_texts(v) for v in value)
    return value


def content_problem(
    value: Any, *, max_depth: int = MAX_CONTENT_DEPTH, max_chars: int | None = None, strict: bool = True
) -> str | None:
    """Why ``value`` cannot be kept as JSON, or None when it can: nesting deeper than ``max_depth``
    containers, (an estimate of) more than ``max_chars`` characters of JSON text, and, when ``strict``,
    a value JSON has no type for or a dict key that is not a string; a string (or key) with a lone surrogate
    (``"\\ud800"`` in JSON text), which no UTF-8 file can hold. Not strict, other values pass
    here (a set, a path: the trajectory's writer turns them into lists and strings, or refuses them).
    The walk uses no recursion and stops at the first problem, so neither a value nested 100,000 deep
    nor one of a billion items can exhaust the stack or hold it up for long."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    containers = (dict, list, tuple) if strict else (dict, list, tuple, set, frozenset)
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _unencodable(item):
                return f"holds a lone surrogate ({_surrogate(item)}), which UTF-8 cannot encode"
            size += len(item) + 2
        elif item is None or isinstance(item, bool | int | float):
            # An int's digits without converting it (a 5000-digit int has no decimal text in Python).
            if isinstance(item, int) and _too_many_digits(item):
                digits = sys.get_int_max_str_digits()
                return f"holds an integer of more than {digits:,} digits, which cannot be written as JSON"
            size += item.bit_length() // 3 + 1 if isinstance(item, int) else 5
        elif isinstance(item, containers):
            if depth >= max_depth:
                return f"is nested more than {max_depth} levels deep"
            size += len(item) + 2
            if isinstance(item, dict):
                for key, child in item.items():
                    if strict and not isinstance(key, str):
                        return f"has a dict key that is not a string ({type(key).__name__})"
                    if isinstance(key, str) and _unencodable(key):
                        return f"has a dict key with a lone surrogate ({_surrogate(key)}), which UTF-8 cannot encode"
                    size += len(key) + 3 if isinstance(key, str) else 8
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif strict:
            return f"holds a value of type {type(item).__name__}, which JSON cannot hold"
        if max_chars is not None and size > max_chars:
            return f"is longer than {max_chars:,} characters as JSON"
    return None


def _too_many_digits(value: int) -> bool:
    """Whether Python refuses to write ``value`` in decimal (``sys.set_int_max_str_digits``)."""
    limit = sys.get_int_max_str_digits()
    if limit == 0 or value.bit_length() < 3 * limit:  # (fewer digits than the limit, by far)
        return False
    try:
        str(value)  # Python refuses a value far past the limit from its size, before converting anything
    except ValueError:
        return True
    return False


def _unencodable(text: str) -> bool:
    return valid_text(text) is not text


def _surrogate(text: str) -> str:
    return next(f"\\u{ord(c):04x}" for c in text if 0xD800 <= ord(c) <= 0xDFFF)


def parse_answer(content: Any, *, max_chars: int = MAX_ANSWER_CHARS) -> Any:
    """A submitted answer as the JSON value it is kept and scored as: JSON text is parsed, any other
    value goes through JSON once (tuples become lists), so that scoring it now and re-scoring the
    saved trajectory later see the same value. Raises ``ValueError`` with a message for the agent
    when the answer is not JSON, is nested too deeply or is too long."""
    if isinstance(content, str):
        if len(content) > max_chars:
            raise ValueError(f"the submission is longer than {max_chars:,} characters")
        try:
            value = json.loads(content)
        except json.JSONDecodeError as e:
            raise ValueError(f"the submission is not valid JSON ({e.msg} at character {e.pos})") from e
        except RecursionError as e:
            raise ValueError(f"the submission is nested more than {MAX_CONTENT_DEPTH} levels deep") from e
        except ValueError as e:  # an integer too long to read
            raise ValueError(f"the submission cannot be read: {e}") from e
        problem = content_problem(value)
        if problem is not None:
            raise ValueError(f"the submission {problem}")
        return value
    problem = content_problem(content, max_chars=max_chars)
    if problem is not None:
        raise ValueError(f"the submission {problem}")
    try:
        text = json.dumps(content)
    except ValueError as e:  # an integer too long to write
        raise ValueError(f"the submission cannot be written as JSON: {e}") from e
    if len(text) > max_chars:
        raise ValueError(f"the submission is longer than {max_chars:,} characters as JSON")
    return json.loads(text)

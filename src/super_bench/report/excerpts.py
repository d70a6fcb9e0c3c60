"""Text for the viewer: outputs made readable without losing track of where landmarks matched, capped
to a head, a tail and a window around each match; and a submission compared field by field with gold."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import regex

from super_bench.scoring.answer import score_answer

# ANSI escapes, the carriage return of "\r\n", and control characters: dropped for display. A lone
# carriage return (a progress bar redrawing) becomes a newline, so every redraw stays visible.
_INVISIBLE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r(?=\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
)

Span = tuple[int, int, int | str]  # start, end, and what is marked: a landmark's number, or an answer's field


def display_text(raw: str) -> tuple[str, Callable[[int], int]]:
    """The text to show, and a map from offsets in ``raw`` to offsets in it."""
    starts: list[int] = []  # each removed run of raw: its start, end, and what was removed before it
    ends: list[int] = []
    before: list[int] = []
    pieces: list[str] = []
    last = removed = 0
    for match in _INVISIBLE.finditer(raw):
        pieces.append(raw[last : match.start()])
        starts.append(match.start())
        ends.append(match.end())
        before.append(removed)
        removed += match.end() - match.start()
        last = match.end()
    pieces.append(raw[last:])
    text = "".join(pieces).replace("\r", "\n")

    def to_display(offset: int) -> int:
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            return offset
        if offset < ends[i]:  # inside a removed run: where the run was
            return starts[i] - before[i]
        return offset - before[i] - (ends[i] - starts[i])

    return text, to_display


def landmark_spans(raw: str, patterns: Sequence[tuple[int, regex.Pattern[str]]]) -> list[Span]:
    """Where each landmark first matches, searched as scoring does (compiled by ``compile_landmark``, newlines
    read as spaces)."""
    flat = raw.replace("\n", " ")
    spans: list[Span] = []
    for number, pattern in patterns:
        match = pattern.search(flat)
        if match is not None:
            spans.append((match.start(), match.end(), number))
    return spans


def excerpt(
    raw: str, spans: Sequence[Span] = (), *, head: int = 2000, tail: int = 6000, context: int = 300
) -> dict[str, Any]:
    """The displayable text cut to its head, its tail and a window around each span.

    ``{"n": length, "p": [[offset, text], ...], "m": [[start, end, landmark], ...]}``, offsets in the
    display text; gaps between parts are what was cut.
    """
    text, to_display = display_text(raw)
    marks = [(to_display(s), max(to_display(e), to_display(s)), n) for s, e, n in spans]
    n = len(text)
    keep = [(0, min(n, head)), (max(0, n - tail), n)]
    keep += [(max(0, s - context), min(n, min(e, s + 4 * context) + context)) for s, e, _ in marks]
    parts: list[list[Any]] = []
    for start, end in _merge(keep):
        parts.append([start, text[start:end]])
    return {"n": n, "p": parts, "m": [list(m) for m in marks]}


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def capped(text: str | None, limit: int) -> str | None:
    """Short text (a thought), cut at ``limit`` with a note of how much was cut."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters not shown ...]"


# -- the submission against gold ------------------------------------------------------------------
def answer_rows(submission: Any, gold: Any, submitted: bool = True) -> list[list[Any]]:
    """``[field, gold, submitted, status]`` per gold field (status ``match``, ``differs`` or ``missing``),
    then per field only in the submission (``extra``); values as JSON text."""
    rows: list[list[Any]] = []
    _compare("", gold, submission, submitted, rows)
    return rows


def _compare(path: str, gold: Any, sub: Any, present: bool, rows: list[list[Any]]) -> None:
    if not present:
        for leaf_path, value in _leaves(path, gold):
            rows.append([leaf_path or "(answer)", _json(value), None, "missing"])
        return
    if isinstance(gold, dict) and isinstance(sub, dict) and gold:
        for key, value in gold.items():
            _compare(_key(path, key), value, sub.get(key), key in sub, rows)
        for key in sub.keys() - gold.keys():
            rows.extend([p, None, _json(v), "extra"] for p, v in _leaves(_key(path, key), sub[key]))
        return
    if isinstance(gold, list) and isinstance(sub, list) and gold:
        for i, value in enumerate(gold):
            _compare(f"{path}[{i}]", value, sub[i] if i < len(sub) else None, i < len(sub), rows)
        for i in range(len(gold), len(sub)):
            rows.extend([p, None, _json(v), "extra"] for p, v in _leaves(f"{path}[{i}]", sub[i]))
        return
    status = "match" if score_answer(sub, gold) == 1.0 else "differs"
    rows.append([path or "(answer)", _json(gold), _json(sub), status])


def _leaves(path: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(_key(path, k), v)]
    if isinstance(value, list) and value:
        return [leaf for i, v in enumerate(value) for leaf in _leaves(f"{path}[{i}]", v)]
    return [(path, value)]


def _key(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)

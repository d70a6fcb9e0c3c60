"""Answer provenance: for each value of a submission, the first step whose output showed it.

An agent can submit a number its run never produced (copied, guessed, remembered); output match cannot
tell. Provenance looks for every leaf value of the submission (each number, string and boolean, at any
depth) in the raw output of the agent's own cells, in order, and records the first step that shows it:

- a number is shown by a printed number that equals it, or that rounds or truncates to it at the
  submitted number of decimals while staying within output match's 1e-2 (``0.8523`` printed supports
  ``0.85`` and ``0.852``; not ``0.86``, nor ``0.9``). Integers and floats meet (``7`` and ``7.0``);
  scientific notation (``8.523e-01``) is read; a number followed by ``%`` also supports its hundredth
  (``85.23%`` supports ``0.8523``), a bare ``85.23`` does not. A number glued to a letter, digit, ``_``
  or ``.`` before it (``resnet50``, ``v1.2``) or followed by ``.`` and a digit (``1.2.3``) is not read
  as a number; units after it are fine (``7.40s``);
- a string is shown by the same text (stripped), not glued to letters or digits at either end;
- a boolean by ``True``/``true`` (``False``/``false``) as a word.

Only the output of the agent's cells counts (``execute``, and ``continue_wait``/``interrupt`` of a
cell it started), not what the harness wrote for it (an edit's report, an invalid action's message)
and not a pre-executed cell's (a Masked task's given cells: not the agent's work; such a sighting is
noted as ``pre_executed_step``, and an answer whose values were all shown, some only by given cells, is
``given``: neither observed nor unobserved), and not a cell that only prints files of source code or
configuration (``listing``: ``!cat train.py`` shows what the code would do, not a result). A number the
agent's own code spelled out as a non-integer literal (``print(7.4031)``, an edited file) before any output
showed it no longer counts from that step on: the output only echoes what the agent typed (``typed_step``).
docs/verification.md has the rules and their limits.

The search itself (how a text shows a value, and how a trajectory's texts are searched at once) is in
``shown``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, Literal

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.reading import Grammar, read_steps
from super_bench.scoring.listing import prints_source
from super_bench.scoring.shown import Finder, Number, finder_for
from super_bench.scoring.submission import utf8_text
from super_bench.scoring.texts import Chunks, Text, outputs
from super_bench.trajectory import Step

ProvenanceStatus = Literal["observed", "partly_observed", "given", "unobserved"]
PROVENANCE_STATUSES: tuple[str, ...] = ("observed", "partly_observed", "given", "unobserved")
# An answer is a few values; a submission of thousands (a list of predictions) is traced in its first
# values and counted unobserved beyond them, so that no answer can make scoring slow.
MAX_TRACED_VALUES = 64
PROVENANCE_KEY = "answer_provenance"  # where a trajectory's metadata keeps its answer's provenance
_TYPED_IN = ("execute", "edit")
_INDEX = attrgetter("index")


class FieldProvenance(Model):
    """Where one submitted value was first shown."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Its place in the submission (results.acc, scores[0]); empty for a bare answer")
    value: Any
    step: int | None = Field(None, description="The first step of the agent whose output showed it; null if none")
    text: str | None = Field(
        None, description="The value as printed at step, or (where only a given cell showed it) at pre_executed_step"
    )
    offset: int | None = Field(None, description="Where that text starts in that step's raw output")
    pre_executed_step: int | None = Field(None, description="The first pre-executed (given) cell that showed it")
    typed_step: int | None = Field(
        None, description="The step whose code spelled it out before any output showed it; later output does not count"
    )

    @property
    def observed(self) -> bool:
        return self.step is not None

    @property
    def given(self) -> bool:
        """Shown by a given (pre-executed) cell and never by the agent's own output."""
        return self.step is None and self.pre_executed_step is not None


class AnswerProvenance(Model):
    """Provenance of a whole submission."""

    model_config = ConfigDict(extra="forbid")

    fields: list[FieldProvenance] = Field(default_factory=list)
    untraced: int = Field(0, description=f"Values beyond the first {MAX_TRACED_VALUES}, not traced one by one")
    untraced_shown: int = Field(
        0, description="How many of those the output that showed the last traced value showed after it, in order"
    )

    @property
    def status(self) -> ProvenanceStatus | None:
        """observed (the agent's output showed every value), given (every value shown, some only by given
        cells), partly_observed (it showed some), unobserved (none), or None with no value to trace."""
        total = len(self.fields) + self.untraced
        if total == 0:
            return None
        seen = sum(f.observed for f in self.fields)
        seen += self.untraced_shown
        if seen == total:
            return "observed"
        if seen == total:
            return "observed"
        if seen + sum(f.given for f in self.fields) == total:
            return "given"
        return "unobserved" if seen == 0 else "partly_observed"


def trace_answer(
    submission: Any, steps: Sequence[Step], shown: Chunks | None = None, grammar: Grammar = "cells"
) -> AnswerProvenance | None:
    """Where each value of ``submission`` first appears in the output of ``steps`` (``shown``: their raw
    outputs, joined already; ``grammar``: the agent's, see ``reading``); None when nothing was submitted. Null
    values and blank strings are not traced (they hold nothing to find)."""
    if submission is None:
        return None
    evidence = {id(d.step) for d in read_steps(list(steps), grammar) if d.evidence}

    def _shows(step: Step) -> bool:
        """An agent's cell whose output counts: it ran something or showed a data file, not source."""
        return id(step) in evidence and not step.pre_executed and _not_listing(step)

    values: list[tuple[str, Any, Finder]] = []
    rest: list[Any] = []
    for path, value in _leaves("", submission):
        if len(values) == MAX_TRACED_VALUES:
            rest.append(value)
            continue
        values.append((path, value, finder_for(type(value).__name__, value)))
    shown = shown if shown is not None else Chunks(steps, outputs)
    sightings = [_first(finder, shown, _shows, named=_named(path, value)) for path, value, finder in values]
    typed = _typed(values, sightings, steps)
    given: Chunks | None = None
    fields: list[FieldProvenance] = []
    for (path, value, finder), sighting, typed_step in zip(values, sightings, typed):
        if sighting is not None and typed_step is None:
            step, offset, text = sighting
            fields.append(FieldProvenance(field=path, value=value, step=step.index, offset=offset, text=text))
            continue
        # Given cells, looked at only for the values the agent's output never showed.
        if given is None:
            cells = [s for s in steps if s.pre_executed and id(s) in evidence and _not_listing(s)]
            given = Chunks(cells, outputs)
        hit = _first(finder, given, _anything)
        where = {"pre_executed_step": hit[0].index, "offset": hit[1], "text": hit[2]} if hit is not None else {}
        fields.append(FieldProvenance(field=path, value=value, typed_step=typed_step, **where))
    shown_rest = _shown_in_order(rest, fields, steps) if rest else 0
    return AnswerProvenance(fields=fields, untraced=len(rest), untraced_shown=shown_rest)


def _shown_in_order(rest: list[Any], fields: list[FieldProvenance], steps: Sequence[Step]) -> int:
    """How many of a long answer's values beyond the traced ones the output that showed the last traced value
    shows after it, one after another (a list of predictions printed whole): each is looked for from where the
    one before it ended, and the look stops at the first one missing, so that reading is bounded by the
    output's length."""
    last = fields[-1]
    step = next((s for s in steps if s.index == last.step), None)
    if step is None or last.offset is None or last.text is None or not all(f.observed for f in fields):
        return 0
    text = Text([step.raw_output])
    at = last.offset + len(last.text)
    for n, value in enumerate(rest):
        hit = finder_for(type(value).__name__, value).find(text, start=at)
        if hit is None:
            return n
        at = hit[0] + len(hit[1])
    return len(rest)


def _not_listing(step: Step) -> bool:
    """Not a cell that only prints files of source code or configuration (``listing``): no evidence of a result."""
    content = step.action.content
    return not (step.action.type == "execute" and isinstance(content, str) and prints_source(content))


def _typed_by_agent(step: Step) -> bool:
    """An agent's action whose content it typed: code, or an edit."""
    return step.action.type in _TYPED_IN and not step.pre_executed and step.outcome != "invalid"


def _contents(steps: Sequence[Step]) -> list[str]:
    """Each step's action's text (a cell's code, an edit); empty where it has none. Whose it is, is asked of
    a step only where the text holds the value (``_typed_by_agent``): fewer reads of each step."""
    return [content if isinstance(content := s.action.content, str) else "" for s in steps]


def _typed(
    values: list[tuple[str, Any, Finder]], sightings: list[tuple[Step, int, str] | None], steps: Sequence[Step]
) -> list[int | None]:
    """For each value, the step whose code the agent typed it in (spelled out) before or where its output first
    showed it: the output only echoes what the agent typed, so the sighting does not count. Only numbers are
    asked of, and only the code of steps up to the last sighting is read."""
    typed: list[int | None] = [None] * len(values)
    seen = [s[0].index for (_, _, finder), s in zip(values, sightings) if s is not None and isinstance(finder, Number)]
    if not seen:
        return typed
    codes = Chunks(steps[: bisect_right(steps, max(seen), key=_INDEX)], _contents)
    for i, ((_, _, finder), sighting) in enumerate(zip(values, sightings)):
        if sighting is None or not isinstance(finder, Number):
            continue
        hit = _first(finder, codes, _typed_by_agent, typed=True)
        if hit is not None and hit[0].index <= sighting[0].index:
            typed[i] = hit[0].index
    return typed


def _anything(step: Step) -> bool:
    return True


def _first(
    finder: Finder,
    chunks: Chunks,
    counts: Callable[[Step], bool],
    typed: bool = False,
    named: re.Pattern[str] | None = None,
) -> tuple[Step, int, str] | None:
    """The first step that ``counts`` and whose text shows the value, and where and as what it shows it;
    with ``named``, only on a line that holds that name (the metric's)."""
    for steps, text in chunks:
        start = 0
        while (hit := finder.find(text, typed, start)) is not None:
            k, offset = text.locate(hit[0])
            if counts(steps[k]) and offset + len(hit[1]) <= len(text.texts[k]):
                if named is None or _on_named_line(text.text, hit[0], named):
                    return steps[k], offset, hit[1]
                start = hit[0] + 1
                continue
            start = text.after(k)
    return None


def _named(path: str, value: Any) -> re.Pattern[str] | None:
    """For an integer answer of 0 or 1 (a count, a flag, a placeholder: such digits are everywhere), the name
    its line must hold to show it as that metric's value: the last part of its place (``total_tokens``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1):
        return None
    name = re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1]
    words = [w for w in re.split(r"[\W_]+", name) if w]
    if not words:
        return None
    return re.compile(r"[\s_-]?".join(re.escape(w) for w in words), re.IGNORECASE)


def _on_named_line(text: str, at: int, named: re.Pattern[str]) -> bool:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return named.search(text, start, end if end >= 0 else len(text)) is not None


def _leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    """Each leaf of ``value`` with its place, in order; a walk without recursion, so that a value of any
    depth is traced. Strings are kept as a UTF-8 file can hold them (``utf8_text``)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            items = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
            stack.extend(reversed(items))
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(reversed([(f"{path}[{i}]", item) for i, item in enumerate(value)]))
        elif value is None or (isinstance(value, str) and not value.strip()):
            continue
        elif isinstance(value, str):
            yield utf8_text(path), utf8_text(value)
        elif isinstance(value, bool | int | float):
            yield utf8_text(path), value
        else:  # a Python literal JSON has no type for (an imported answer): looked for as its text
            yield utf8_text(path), utf8_text(repr(value))

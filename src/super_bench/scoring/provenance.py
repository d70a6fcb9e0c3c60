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
noted as ``pre_executed_step``). A number the agent's own code spelled out as a non-integer literal
(``print(7.4031)``, an edited file) before any output showed it no longer counts from that step on:
the output only echoes what the agent typed (``typed_step``). docs/verification.md has the rules
and their limits.

Each step's output is scanned a few times over (a fixed number of literal searches per value, each
linear in the output, and a look before each ``%``), never number by number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from decimal import ROUND_DOWN, Context, Decimal, InvalidOperation, localcontext
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from super_bench.trajectory import Step

ProvenanceStatus = Literal["observed", "partly_observed", "unobserved"]
PROVENANCE_STATUSES: tuple[str, ...] = ("observed", "partly_observed", "unobserved")
# An answer is a few values; a submission of thousands (a list of predictions) is traced in its first
# values and counted unobserved beyond them, so that no answer can make scoring slow.
MAX_TRACED_VALUES = 64
TOLERANCE = Decimal("0.01")  # output match's: floats match when they differ by less than this

_CONTEXT = Context(prec=80)  # exact for every number a float or a printed token holds
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_BEFORE_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)? ?\Z")
_SHOWN_BY = ("execute", "continue_wait", "interrupt")
_TYPED_IN = ("execute", "edit")
_SHORT = 4  # literals shorter than this are frequent in any output: searched by a regex that checks their ends


class FieldProvenance(BaseModel):
    """Where one submitted value was first shown."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Its place in the submission (results.acc, scores[0]); empty for a bare answer")
    value: Any
    step: int | None = Field(None, description="The first step of the agent whose output showed it; null if none")
    text: str | None = Field(None, description="The value as printed there")
    offset: int | None = Field(None, description="Where that text starts in the step's raw output")
    pre_executed_step: int | None = Field(None, description="The first pre-executed (given) cell that showed it")
    typed_step: int | None = Field(
        None, description="The step whose code spelled it out before any output showed it; later output does not count"
    )

    @property
    def observed(self) -> bool:
        return self.step is not None


class AnswerProvenance(BaseModel):
    """Provenance of a whole submission."""

    model_config = ConfigDict(extra="forbid")

    fields: list[FieldProvenance] = Field(default_factory=list)
    untraced: int = Field(0, description=f"Values beyond the first {MAX_TRACED_VALUES}, not looked for: unobserved")

    @property
    def status(self) -> ProvenanceStatus | None:
        """observed (every value), partly_observed, unobserved (none), or None with no value to trace."""
        total = len(self.fields) + self.untraced
        if total == 0:
            return None
        seen = sum(f.observed for f in self.fields)
        return "observed" if seen == total else "unobserved" if seen == 0 else "partly_observed"


def trace_answer(submission: Any, steps: Sequence[Step]) -> AnswerProvenance | None:
    """Where each value of ``submission`` first appears in the output of ``steps``; None when nothing was
    submitted. Null values and blank strings are not traced (they hold nothing to find)."""
    if submission is None:
        return None
    fields: list[FieldProvenance] = []
    finders: list[_Finder] = []
    untraced = 0
    for path, value in _leaves("", submission):
        if len(fields) == MAX_TRACED_VALUES:
            untraced += 1
            continue
        fields.append(FieldProvenance(field=path, value=value))
        finders.append(_finder(value))
    pending = set(range(len(fields)))  # neither shown nor typed yet
    unseen_pre = set(pending)
    for step in steps:
        if not pending:
            break
        if step.outcome == "invalid":
            continue  # never ran: its observation is the harness's message
        if step.pre_executed:
            if step.action.type == "execute" and unseen_pre & pending:
                output = _Output(step.raw_output)
                for i in sorted(unseen_pre & pending):
                    if finders[i].find(output) is not None:
                        fields[i].pre_executed_step = step.index
                        unseen_pre.discard(i)
            continue
        code = step.action.content
        if step.action.type in _TYPED_IN and isinstance(code, str):
            typed = _Output(code)
            for i in sorted(pending):
                if finders[i].typed(typed):
                    fields[i].typed_step = step.index
                    pending.discard(i)
        if step.action.type in _SHOWN_BY:
            output = _Output(step.raw_output)
            for i in sorted(pending):
                hit = finders[i].find(output)
                if hit is not None:
                    fields[i].step, fields[i].offset, fields[i].text = step.index, hit[0], hit[1]
                    pending.discard(i)
    return AnswerProvenance(fields=fields, untraced=untraced)


def _leaves(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(f"{path}.{key}" if path else str(key), item)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            yield from _leaves(f"{path}[{i}]", item)
    elif value is None or (isinstance(value, str) and not value.strip()):
        return
    elif isinstance(value, bool | int | float | str):
        yield path, value
    else:  # a Python literal JSON has no type for (an imported answer): looked for as its text
        yield path, repr(value)


# -- one step's text ----------------------------------------------------------------------------------
class _Output:
    """A text searched for several values; its percentages are read once, when first needed."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._percents: list[tuple[int, str, Decimal]] | None = None

    def percents(self) -> list[tuple[int, str, Decimal]]:
        """``(offset, printed text, value / 100)`` of each distinct number printed before a ``%``."""
        if self._percents is None:
            seen: dict[str, tuple[int, str, Decimal]] = {}
            text = self.text
            at = text.find("%")
            while at >= 0:
                window = max(0, at - 64)
                match = _BEFORE_PERCENT.search(text, window, at)
                number = None if match is None else _number_at(text, match.start())
                if number is not None and number[1] not in seen:
                    start, printed, value = number
                    seen[printed] = (start, text[start : at + 1], value.scaleb(-2))
                at = text.find("%", at + 1)
            self._percents = list(seen.values())
        return self._percents


def _glued(char: str) -> bool:
    return char.isalnum() or char in "_."


def _number_at(text: str, i: int) -> tuple[int, str, Decimal] | None:
    """The number whose digits start at ``i`` (its sign included): ``(start, printed text, value)``, or
    None where the digits are part of a longer token (``resnet50``, ``1.2.3``)."""
    if i > 0 and _glued(text[i - 1]):
        return None
    match = _NUMBER.match(text, i)
    if match is None:
        return None
    end = match.end()
    if text[end : end + 1] == "." and text[end + 1 : end + 2].isdigit():
        return None  # a version or a dotted name
    start, negative = i, False
    if i > 0 and text[i - 1] in "+-" and (i == 1 or not _glued(text[i - 2])):
        start, negative = i - 1, text[i - 1] == "-"
    value = Decimal(match.group())
    return start, text[start:end], -value if negative else value


@lru_cache(maxsize=2048)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class _Finder:
    """Finds one value in a text: ``(offset, printed text)`` or None."""

    def find(self, output: _Output) -> tuple[int, str] | None:
        raise NotImplementedError

    def typed(self, code: _Output) -> bool:
        """Whether agent code spells the value out (only numbers written as non-integers count)."""
        return False


def _finder(value: Any) -> _Finder:
    if isinstance(value, bool):
        return _Words(("True", "true") if value else ("False", "false"))
    if isinstance(value, float) and math.isnan(value):
        return _Words(("nan", "NaN"))
    if isinstance(value, float) and math.isinf(value):
        sign = "-" if value < 0 else ""
        return _Words((f"{sign}inf", f"{sign}Infinity"))
    if isinstance(value, int | float):
        try:
            return _Number(value)
        except InvalidOperation:  # more digits than any printed number could round to: looked for as text
            return _Words((str(value),))
    return _Words((str(value).strip(),))


class _Words(_Finder):
    """Text, as a word: not glued to a letter or digit where its own end is one."""

    def __init__(self, literals: tuple[str, ...]) -> None:
        self.literals = literals

    def find(self, output: _Output) -> tuple[int, str] | None:
        text = output.text
        for literal in self.literals:
            at = text.find(literal)
            while at >= 0:
                end = at + len(literal)
                before_ok = at == 0 or not (_word(literal[0]) and _word(text[at - 1]))
                after_ok = end == len(text) or not (_word(literal[-1]) and _word(text[end]))
                if before_ok and after_ok:
                    return at, literal
                at = text.find(literal, at + 1)
        return None


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


class _Number(_Finder):
    """A submitted number and the printed numbers that support it."""

    def __init__(self, value: int | float) -> None:
        self.target = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
        exponent = self.target.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        self.unit = Decimal(1).scaleb(-decimals)
        literals, patterns = _probes(abs(self.target), self.unit, max(decimals, 2))
        self.literals = literals
        self.patterns = [_regex(p) for p in patterns]

    def supports(self, printed: Decimal) -> bool:
        """Equal, or rounds or truncates to the target at its decimals, within the tolerance."""
        diff = abs(_CONTEXT.subtract(printed, self.target))
        if diff >= TOLERANCE:
            return False
        if _CONTEXT.multiply(diff, 2) <= self.unit:
            return True
        try:
            return printed.quantize(self.unit, rounding=ROUND_DOWN, context=_CONTEXT) == self.target
        except InvalidOperation:
            return False

    def _numbers(self, text: str) -> Iterator[tuple[int, str, Decimal]]:
        """The numbers of ``text`` that a probe lands on, probe by probe."""
        for literal in self.literals:
            at = text.find(literal)
            while at >= 0:
                number = _number_at(text, at)
                if number is not None:
                    yield number
                at = text.find(literal, at + 1)
        for pattern in self.patterns:
            for match in pattern.finditer(text):
                number = _number_at(text, match.start())
                if number is not None:
                    yield number

    def find(self, output: _Output) -> tuple[int, str] | None:
        for start, printed, value in self._numbers(output.text):
            if self.supports(value):
                return start, printed
        if "%" in output.text:
            for start, printed, value in output.percents():
                if self.supports(value):
                    return start, printed
        return None

    def typed(self, code: _Output) -> bool:
        return any(
            self.supports(value) and any(c in printed for c in ".eE") for _, printed, value in self._numbers(code.text)
        )


def _probes(target: Decimal, unit: Decimal, places: int) -> tuple[list[str], list[str]]:
    """What to search for to find every printed number that could support ``target`` (>= 0; the sign
    is checked on each hit): literals, and regexes for literals too short to search for alone.

    Every supporting number lies within ``[target - min(unit/2, 0.01), target + min(unit, 0.01))``; cut to
    ``places`` decimals, it begins with one of at most three prefixes, which are the probes (a prefix that
    ends in zeros may be printed without them: ``7.00`` as ``7``). The same for its scientific notation,
    mantissa by mantissa, with the exponent."""
    literals: list[str] = []
    short: list[tuple[str, str]] = []
    with localcontext(_CONTEXT):
        if target == 0:
            low, high = Decimal(0), min(unit, TOLERANCE)
        else:
            low, high = target - min(unit / 2, TOLERANCE), target + min(unit, TOLERANCE)
        for prefix in _prefixes(low, high, places):
            _add(prefix, "", literals, short)
        if target != 0:
            last = high - Decimal(1).scaleb(-places - 2)
            for exponent in range(low.adjusted(), last.adjusted() + 1):
                scale = Decimal(1).scaleb(exponent)
                m_low, m_high = max(low, scale).scaleb(-exponent), min(high, scale * 10).scaleb(-exponent)
                for prefix in _prefixes(m_low, m_high, max(places + exponent, 0)):
                    _add(prefix, r"[eE][-+]?[0-9]+", literals, short)
    return list(dict.fromkeys(literals)), _grouped(short)


def _prefixes(low: Decimal, high: Decimal, places: int) -> list[str]:
    """The ``places``-decimal prefixes of the numbers in ``[low, high)``."""
    step = Decimal(1).scaleb(-places)
    value = low.quantize(step, rounding=ROUND_DOWN)
    found = []
    while value < high:
        found.append(f"{value:.{places}f}")
        value += step
    return found


def _add(prefix: str, exponent: str, literals: list[str], short: list[tuple[str, str]]) -> None:
    """File a prefix as a literal to search for, or as a short one with what must follow it. A prefix that
    ends in zeros may be printed without them (``7.00`` as ``7``): its bare form is what is searched."""
    bare = (prefix.rstrip("0").rstrip(".") or "0") if "." in prefix else prefix
    if exponent:
        # A mantissa: any digits may follow (the hit is checked), then the exponent.
        short.append((bare, (r"[0-9]*" if "." in bare else r"(?:\.[0-9]*)?") + exponent))
    elif len(bare) >= _SHORT:
        literals.append(bare)
    else:
        # Only zeros may follow at once (and, without a decimal point yet, the point and zeros).
        short.append((bare, r"(?![1-9])" if "." in bare else r"(?![0-9]|\.[1-9])"))


def _grouped(short: list[tuple[str, str]]) -> list[str]:
    """Regexes for short prefixes, one per first character, each led by its group's common prefix (so the
    regex engine can skip ahead to it), then a check that no letter, digit, ``_`` or ``.`` comes before."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for literal, tail in dict.fromkeys(short):
        groups.setdefault(literal[0], []).append((literal, tail))
    patterns = []
    for members in groups.values():
        common = _common_prefix([literal for literal, _ in members])
        lead = re.escape(common)
        rest = "|".join(re.escape(literal[len(common) :]) + tail for literal, tail in members)
        patterns.append(rf"{lead}(?<![\w.]{lead})(?:{rest})")
    return patterns


def _common_prefix(words: list[str]) -> str:
    first, last = min(words), max(words)
    n = 0
    while n < len(first) and first[n] == last[n]:
        n += 1
    return first[:n]

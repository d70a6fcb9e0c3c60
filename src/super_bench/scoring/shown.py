"""Where a text shows a value (``provenance``'s search): the first place a number, a string or a boolean
is printed, by provenance's rules, in the texts of a trajectory's steps.

Texts are searched joined, many steps at once (``Chunks``), with a few literal searches per value (the
prefixes every supporting number begins with: ``Number``'s probes) and a look before each ``%``, never
number by number; each hit is then read as a number and checked.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from decimal import ROUND_DOWN, Context, Decimal, InvalidOperation
from functools import lru_cache
from itertools import accumulate
from operator import add
from typing import Any

from super_bench.trajectory import Step

TOLERANCE = Decimal("0.01")  # output match's: floats match when they differ by less than this

_CONTEXT = Context(prec=80)  # exact for every number a float or a printed token holds
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NON_INTEGER = re.compile(r"[.eE]")  # in a number's text: written as a non-integer
_BEFORE_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)? ?\Z")
_FIRST_CHUNK = 32  # steps: a whole short trajectory, searched at once
_CHUNK = 1 << 20  # characters joined at most into one text to search (beyond, a text is searched alone)
_SHORT = 4  # literals shorter than this are frequent in any output: searched by a regex that checks their ends


class Chunks:
    """The texts of steps (``texts(steps)``: their outputs, or their code) in chunks of consecutive steps,
    joined as they are first needed: one search over many texts costs less than one per text, and a value
    shown early is found with little joined. Chunks double in steps (32, 64, ...) up to about ``_CHUNK``
    characters (a longer text alone, uncopied)."""

    def __init__(self, steps: Sequence[Step], texts: Callable[[Sequence[Step]], list[str]]) -> None:
        self.steps, self.texts = steps, texts
        self.chunks: list[tuple[Sequence[Step], Text]] = []
        self.joined = 0  # steps in the chunks so far

    def __iter__(self) -> Iterator[tuple[Sequence[Step], Text]]:
        k = 0
        while k < len(self.chunks) or self._grow():
            yield self.chunks[k]
            k += 1

    def _grow(self) -> bool:
        first = self.joined
        if first >= len(self.steps):
            return False
        steps = self.steps[first : first + max(_FIRST_CHUNK, 2 * first)]
        texts = self.texts(steps)
        n = len(texts)
        if sum(map(len, texts)) > _CHUNK:
            n = max(1, bisect_right(list(accumulate(map(len, texts))), _CHUNK))
        self.chunks.append((steps[:n], Text(texts[:n])))
        self.joined = first + n
        return True


def outputs(steps: Sequence[Step]) -> list[str]:
    """The steps' raw outputs (``Step.raw_output``, read without a property call per step: a trajectory has
    hundreds)."""
    return [s.observation if s.output is None else s.output for s in steps]


class Text:
    """The texts of a trajectory's steps (outputs, or code), joined by newlines and searched at once (one
    search over all of them costs less than one per step); it tells each hit's step. Where each text
    starts, and the percentages, are read once, when first needed."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.text = "\n".join(texts)
        self._starts: list[int] | None = None
        self._percents: list[tuple[int, str, Decimal]] | None = None

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            ends = list(accumulate(map(len, self.texts)))  # each text's end, not counting the newlines
            self._starts = [0, *map(add, ends[:-1], range(1, len(ends)))]
        return self._starts

    def locate(self, offset: int) -> tuple[int, int]:
        """Which text holds ``offset`` (its position), and the offset in it."""
        k = bisect_right(self.starts, offset) - 1
        return k, offset - self.starts[k]

    def percents(self) -> list[tuple[int, str, Decimal]]:
        """``(offset, printed text, value / 100)`` of each number printed before a ``%``, in order; of a
        number printed more than once in a text (a progress bar's), the first."""
        if self._percents is None:
            seen: dict[tuple[int, str], tuple[int, str, Decimal]] = {}
            text = self.text
            at = text.find("%")
            while at >= 0:
                window = max(0, at - 64)
                match = _BEFORE_PERCENT.search(text, window, at)
                number = None if match is None else _number_at(text, match.start())
                if number is not None:
                    start, printed, value = number
                    seen.setdefault((self.locate(start)[0], printed), (start, text[start : at + 1], value.scaleb(-2)))
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


class Finder(ABC):
    """Finds one value in a text: the first place from ``start`` on that shows it, ``(offset, printed
    text)``, or None."""

    @abstractmethod
    def find(self, text: Text, typed: bool = False, start: int = 0) -> tuple[int, str] | None:
        """With ``typed``, in code: where it spells the value out (numbers only, as non-integers)."""


@lru_cache(maxsize=1024)
def finder_for(kind: str, value: Any) -> Finder:
    """How to find a value; by its type too, so that ``1``, ``1.0`` and ``True`` are told apart. Finders hold
    no state, so one serves every answer with the same value."""
    if isinstance(value, bool):
        return Words(("True", "true") if value else ("False", "false"))
    if isinstance(value, float) and math.isnan(value):
        return Words(("nan", "NaN"))
    if isinstance(value, float) and math.isinf(value):
        sign = "-" if value < 0 else ""
        return Words((f"{sign}inf", f"{sign}Infinity"))
    if isinstance(value, int | float):
        return Number(value)
    return Words((str(value).strip(),))


class Words(Finder):
    """Text, as a word: not glued to a letter or digit where its own end is one."""

    def __init__(self, literals: tuple[str, ...]) -> None:
        self.literals = literals

    def find(self, text: Text, typed: bool = False, start: int = 0) -> tuple[int, str] | None:
        if typed:
            return None
        whole = text.text
        found, limit = None, len(whole)
        for literal in self.literals:
            at = whole.find(literal, start, limit + len(literal))
            while 0 <= at < limit:
                if self._apart(whole, literal, at, at + len(literal)):
                    found, limit = (at, literal), at
                    break
                at = whole.find(literal, at + 1, limit + len(literal))
        return found

    @staticmethod
    def _apart(text: str, literal: str, at: int, end: int) -> bool:
        before_ok = at == 0 or not (_word(literal[0]) and _word(text[at - 1]))
        return before_ok and (end == len(text) or not (_word(literal[-1]) and _word(text[end])))


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


class Number(Finder):
    """A submitted number and the printed numbers that support it."""

    def __init__(self, value: int | float) -> None:
        self.target = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
        _, digits, exponent = self.target.as_tuple()
        assert isinstance(exponent, int)  # a finite number
        decimals = max(-exponent, 0)
        self.unit = Decimal(1).scaleb(-decimals)
        places = max(decimals, 2)
        # The target's magnitude in whole units of 10^-(places+1): exact integers from here on.
        scaled = int("".join(map(str, digits))) * 10 ** (exponent + places + 1)
        self.literals, self.patterns = _probes(scaled, places, decimals)

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

    def find(self, text: Text, typed: bool = False, start: int = 0) -> tuple[int, str] | None:
        """The first supporting number: each probe is searched only up to the best hit so far."""
        whole = text.text
        found: tuple[int, str] | None = None
        limit = len(whole)
        for literal in self.literals:
            at = whole.find(literal, start, limit + len(literal))
            while 0 <= at < limit:
                hit = self._hit(whole, at, typed)
                if hit is not None:
                    found, limit = hit, hit[0]
                    break
                at = whole.find(literal, at + 1, limit + len(literal))
        for pattern in self.patterns:
            match = pattern.search(whole, start, limit + _SHORT)
            while match is not None and match.start() < limit:
                hit = self._hit(whole, match.start(), typed)
                if hit is not None:
                    found, limit = hit, hit[0]
                    break
                match = pattern.search(whole, match.start() + 1, limit + _SHORT)
        if not typed and whole.find("%", start) >= 0:
            for at, printed, value in text.percents():
                if at >= limit:
                    break
                if at >= start and self.supports(value):
                    return at, printed
        return found

    def _hit(self, text: str, at: int, typed: bool) -> tuple[int, str] | None:
        """The number at ``at`` if it supports the value (and, ``typed``, is written as a non-integer)."""
        number = _number_at(text, at)
        if number is None or not self.supports(number[2]) or (typed and not _NON_INTEGER.search(number[1])):
            return None
        return number[0], number[1]


def _probes(scaled: int, places: int, decimals: int) -> tuple[list[str], list[re.Pattern[str]]]:
    """What to search for to find every printed number that could support a target (of ``decimals``
    decimals, ``scaled`` in units of 10^-(places+1), its sign checked on each hit): literals, and regexes
    for literals too short to search for alone.

    Every supporting number lies within ``[target - min(unit/2, 0.01), target + min(unit, 0.01))``; cut to
    ``places`` decimals it begins with one of at most three prefixes (``0.84`` or ``0.85`` for 0.85), which
    may be printed without trailing zeros (``7.00`` as ``7``). Its scientific notation begins with the same
    significant digits (``8.4`` or ``8.5``), then an exponent."""
    unit = 10 ** (places + 1 - decimals)
    tolerance = 10 ** (places - 1)
    if scaled == 0:
        low, high = 0, min(unit, tolerance)
    else:
        low, high = scaled - min(unit // 2, tolerance), scaled + min(unit, tolerance)
    literals: list[str] = []
    patterns: list[re.Pattern[str]] = []
    v = low // 10
    while v * 10 < high:  # each prefix, in units of 10^-places
        # Printed without its trailing zeros, the prefix is a number of its own: one to look for only
        # where it lies in the window itself.
        shorten = _bare if v * 10 >= low else str
        whole, fraction = divmod(v, 10**places)
        _add(shorten(f"{whole}.{fraction:0{places}d}"), None, literals, patterns)
        if v > 0:  # its scientific notation: the same significant digits, and an exponent they fix
            digits = str(v)
            _add(shorten(f"{digits[0]}.{digits[1:]}"), len(digits) - 1 - places, literals, patterns)
        v += 1
    if scaled != 0 and low < 10:  # numbers below 10^-places: one significant digit above the cut
        for digit in range(low, min(high, 10)):
            _add(str(digit), -places - 1, literals, patterns)
    return _merged(literals), patterns


def _bare(prefix: str) -> str:
    """A prefix as it may be printed without its trailing zeros: ``7.00`` as ``7``, ``0.50`` as ``0.5``."""
    return prefix.rstrip("0").rstrip(".") or "0"


def _add(bare: str, exponent: int | None, literals: list[str], patterns: list[re.Pattern[str]]) -> None:
    """File a prefix: long enough, a literal to search for (each hit is checked); else a regex that checks
    what comes before and after it (a mantissa needs its ``exponent`` after it)."""
    if len(bare) >= _SHORT:
        literals.append(bare)
    else:
        pattern = _short_pattern(bare, exponent)
        if pattern not in patterns:
            patterns.append(pattern)


@lru_cache(maxsize=4096)
def _short_pattern(bare: str, exponent: int | None) -> re.Pattern[str]:
    """A short prefix, not glued to a letter, digit, ``_`` or ``.`` before it; followed by zeros only (and,
    without its decimal point, the point and zeros), or, as a mantissa, by digits and the exponent (so that
    the other numbers of a log in scientific notation, learning rates say, are passed over at once)."""
    lead = re.escape(bare)
    if exponent is not None:
        sign = "-" if exponent < 0 else r"\+?" if exponent > 0 else "[-+]?"
        power = f"0*{abs(exponent)}" if exponent else "0+"
        after = (r"[0-9]*" if "." in bare else r"(?:\.[0-9]*)?") + rf"[eE]{sign}{power}(?![0-9])"
    else:
        after = r"(?![1-9])" if "." in bare else r"(?![0-9]|\.[1-9])"
    # Compiled once per prefix (there are a few thousand short ones), and led by the prefix itself, so
    # that the regex engine skips ahead to it.
    return re.compile(rf"{lead}(?<![\w.]{lead}){after}")


def _merged(literals: list[str]) -> list[str]:
    """The literals; those that share a prefix longer than a short one are searched for once, by it."""
    merged: list[str] = []
    for literal in sorted(set(literals)):
        if merged:
            common = _common_prefix(merged[-1], literal)
            if len(common) > _SHORT:
                merged[-1] = common
                continue
        merged.append(literal)
    return merged


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]

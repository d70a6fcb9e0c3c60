"""Where a text shows a value (``provenance``'s search): the first place a number, a string or a boolean
is printed, by provenance's rules, in the texts of a trajectory's steps.

Texts are searched joined, many steps at once (``texts.Chunks``), with a few literal searches per value (the
prefixes every supporting number begins with: ``Number``'s probes) and a look before each ``%``, never
number by number; each hit is then read as a number and checked.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from decimal import ROUND_DOWN, Context, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from super_bench.scoring.meters import LineMemo, not_evidence
from super_bench.scoring.texts import Text

TOLERANCE = Decimal("0.01")  # output match's: floats match when they differ by less than this

_CONTEXT = Context(prec=80)  # exact for every number a float or a printed token holds
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NON_INTEGER = re.compile(r"[.eE]")  # in a number's text: written as a non-integer
_BEFORE_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)? ?\Z")
_SHORT = 4  # literals shorter than this are frequent in any output: searched by a regex that checks their ends


def percents(text: Text) -> list[tuple[int, str, Decimal]]:
    """``(offset, printed text, value / 100)`` of each number ``text`` prints before a ``%``, in order; of a
    number printed more than once in one of its texts (a progress bar's), the first. Read once a text."""
    if text.percents is None:
        seen: dict[tuple[int, str], tuple[int, str, Decimal]] = {}
        whole = text.text
        memo = LineMemo()
        at = whole.find("%")
        while at >= 0:
            window = max(0, at - 64)
            match = _BEFORE_PERCENT.search(whole, window, at)
            number = None if match is None else _number_at(whole, match.start())
            if number is not None and not not_evidence(whole, number[0], at, memo):
                start, printed, value = number
                seen.setdefault((text.locate(start)[0], printed), (start, whole[start : at + 1], value.scaleb(-2)))
            at = whole.find("%", at + 1)
        text.percents = list(seen.values())
    return text.percents


def _glued(char: str) -> bool:
    return char.isalnum() or char in "_."


def _number_at(text: str, i: int) -> tuple[int, str, Decimal] | None:
    """The number whose digits start at ``i`` (its sign included): ``(start, printed text, value)``, or
    None where the digits are part of a longer token (``resnet50``, ``1.2.3``, the power of ``1e-5``) or begin
    with a zero before another digit (a clock's ``05``, an id's ``007``)."""
    if i > 0 and _glued(text[i - 1]):
        return None
    if text[i] == "0" and text[i + 1 : i + 2].isdigit():
        return None
    if i > 2 and text[i - 1] in "+-" and text[i - 2] in "eE" and (text[i - 3].isdigit() or text[i - 3] == "."):
        return None
    match = _NUMBER.match(text, i)
    if match is None:
        return None
    end = match.end()
    if text[end : end + 1] == "." and text[end + 1 : end + 2].isalnum():
        return None  # a version or a dotted name (``1.2.3``, ``0.0.post12``)
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
        # A bare ``0`` is everywhere (an index, a count, a dict key, ``unsqueeze(0)``): a submitted float zero is
        # shown only by a number written as a non-integer (``0.0``, ``0.000``, ``3e-05``).
        self.float_zero = isinstance(value, float) and value == 0
        _, digits, exponent = self.target.as_tuple()
        assert isinstance(exponent, int)  # a finite number
        decimals = max(-exponent, 0)
        self.unit = Decimal(1).scaleb(-decimals)
        places = max(decimals, 2)
        # The target's magnitude in whole units of 10^-(places+1): exact integers from here on.
        scaled = int("".join(map(str, digits))) * 10 ** (exponent + places + 1)
        self.searches = _searches(*_probes(scaled, places, decimals))

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
        memo = LineMemo()
        for probe, reach in self.searches:
            match = probe.search(whole, start, limit + reach)
            while match is not None and match.start() < limit:
                hit = self._hit(whole, match.start(), typed, memo)
                if hit is not None:
                    found, limit = hit, hit[0]
                    break
                match = probe.search(whole, match.start() + 1, limit + reach)
        if not typed and whole.find("%", start) >= 0:
            for at, printed, value in percents(text):
                if at >= limit:
                    break
                if at >= start and self.supports(value):
                    return at, printed
        return found

    def _hit(self, text: str, at: int, typed: bool, memo: LineMemo | None = None) -> tuple[int, str] | None:
        """The number at ``at`` if it supports the value: in code (``typed``), written as a non-integer and
        equal to the value at the precision it was written (``3e-5`` does not spell ``0.0``); in output, not
        in a context that is no evidence of a result (``not_evidence``)."""
        number = _number_at(text, at)
        if number is None or not self.supports(number[2]):
            return None
        if typed:
            if not _NON_INTEGER.search(number[1]) or not self._spelled(number[2]):
                return None
        elif (self.float_zero and not _NON_INTEGER.search(number[1])) or not_evidence(
            text, number[0], number[0] + len(number[1]), memo
        ):
            return None
        return number[0], number[1]

    def _spelled(self, literal: Decimal) -> bool:
        """Whether the value, written at the literal's precision, is the literal."""
        exponent = literal.as_tuple().exponent
        assert isinstance(exponent, int)
        try:
            return self.target.quantize(Decimal(1).scaleb(exponent), context=_CONTEXT) == literal
        except InvalidOperation:
            return False


def _probes(scaled: int, places: int, decimals: int) -> tuple[list[str], list[tuple[str, str]]]:
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
    patterns: list[tuple[str, str]] = []
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
    if scaled == 0:  # zero: also every number in scientific notation too small to show at ``places`` decimals
        patterns.append(("", _tiny_pattern(places)))
    return _merged(literals), patterns


def _bare(prefix: str) -> str:
    """A prefix as it may be printed without its trailing zeros: ``7.00`` as ``7``, ``0.50`` as ``0.5``."""
    return prefix.rstrip("0").rstrip(".") or "0"


def _add(bare: str, exponent: int | None, literals: list[str], patterns: list[tuple[str, str]]) -> None:
    """File a prefix: long enough, a literal to search for (each hit is checked); else a regex that checks
    what comes before and after it (a mantissa needs its ``exponent`` after it), with the prefix it begins with."""
    if len(bare) >= _SHORT:
        literals.append(bare)
    else:
        pattern = (bare, _short_pattern(bare, exponent))
        if pattern not in patterns:
            patterns.append(pattern)


def _searches(literals: list[str], patterns: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], int]]:
    """The probes as regexes to search for, each with how far past the best hit so far its match may end and
    still be found (a search stops there). Probes that begin with the same two characters are one regex: the
    regex engine takes what its alternatives begin with alike as a literal to skip ahead to, so one pass over
    the text does for them all (alternatives that begin differently would be tried at every digit: slower)."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for literal in literals:
        groups.setdefault(literal[:2], []).append((re.escape(literal), len(literal)))
    for lead, pattern in patterns:
        groups.setdefault(lead[:2], []).append((pattern, _SHORT))
    return [
        (re.compile("|".join(source for source, _ in group)), max(reach for _, reach in group))
        for group in groups.values()
    ]


@lru_cache(maxsize=4096)
def _short_pattern(bare: str, exponent: int | None) -> str:
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
    # Led by the prefix itself, so that the regex engine skips ahead to it.
    return rf"{lead}(?<![\w.]{lead}){after}"


@lru_cache(maxsize=64)
def _tiny_pattern(places: int) -> str:
    """A number in scientific notation with a nonzero mantissa and a power of ten below ``-places``: smaller
    than 10^-places, so it supports zero at ``places`` decimals (``3e-05`` supports ``0.0``). Led by a class of
    digits, so tried at every one; searched only for zero, which a log shows early as a rule."""
    return rf"[1-9](?<![\w.][1-9])(?:\.[0-9]*)?[eE]-0*{_at_least(places + 1)}(?![0-9])"


def _at_least(bound: int) -> str:
    """A regex for a whole number (without leading zeros) of at least ``bound``."""
    digits = str(bound)
    options = [rf"[1-9][0-9]{{{len(digits)},}}", digits]  # more digits; the bound itself
    for i, digit in enumerate(digits):  # as many digits: the bound's first i, then a greater one, then any
        if digit != "9":
            options.append(f"{digits[:i]}[{int(digit) + 1}-9]" + "[0-9]" * (len(digits) - i - 1))
    return f"(?:{'|'.join(options)})"


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

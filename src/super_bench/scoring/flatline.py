"""A landmark rewritten to search an output as it is, finding what the landmark finds in it with its newlines
read as spaces (the reference's rule), at the same place, so that a long output is searched without that copy.

The text with newlines as spaces differs from the output only where the output has a newline, and has none
itself. So each part of the pattern that reads one character reads a newline as it would read a space (a space
becomes "a space or a newline", a newline never matches, ``.`` matches anything); ``^`` and ``$`` (in any mode)
match only at the text's ends, as they would on a text without newlines (``\\A`` and ``\\Z``); ``\\b`` and
``\\B`` stay, a space and a newline both being non-word characters. The pattern is read with the standard
library's parser (the syntax of ``re``, which the ``regex`` engine's ``VERSION0`` shares) and written out again;
whatever is not certain to mean the same to both (a backreference, a conditional, braces that are not a
count, a possible nested set, a flag other than ``i``, ``m``, ``s``, ``x`` and ``a``, an error or a warning)
is not rewritten, and the output is then searched in the copy, as before.
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from typing import TYPE_CHECKING, Any

from super_bench.tasks.model import compile_landmark

if TYPE_CHECKING:
    import regex  # imported by compile_landmark, on first use

_COUNT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
_SPACE, _NEWLINE = ord(" "), ord("\n")
_ANY = "(?s:.)"
_NEVER = "(?!)"
# What each category (\d, \s, \w and their opposites) says of a space and of a newline: both or neither.
_CATEGORY_HOLDS_BOTH = {
    "CATEGORY_DIGIT": False,
    "CATEGORY_NOT_DIGIT": True,
    "CATEGORY_SPACE": True,
    "CATEGORY_NOT_SPACE": False,
    "CATEGORY_WORD": False,
    "CATEGORY_NOT_WORD": True,
}
_CATEGORY_SOURCE = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


class _Untranslated(Exception):
    """A construct not rewritten: the output is searched in its copy."""


@functools.lru_cache(maxsize=1024)
def flat_pattern(pattern: str) -> str | None:
    """The pattern that finds in a text what ``pattern`` finds in it with newlines as spaces (match or not, and
    the same span); None when it is not rewritten (see the module's notes)."""
    try:
        parser = importlib.import_module("re._parser")  # Python 3.11 and later
        constants = importlib.import_module("re._constants")
    except ImportError:
        return None
    if not _braces_are_counts(pattern):
        return None  # a brace ``re`` takes literally may be a fuzzy match (``{e<=1}``) to ``regex``
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a possible nested set or set operation: ``regex`` may read it so
            parsed = parser.parse(pattern, 0)
    except Exception:  # an error or a warning, whichever: the output is searched in its copy
        return None
    flags = parsed.state.flags
    if flags & ~(re.I | re.M | re.S | re.X | re.U | re.A):
        return None
    try:
        body = _Writer(constants).sequence(parsed)
    except _Untranslated:
        return None
    prefix = ("i" if flags & re.I else "") + ("a" if flags & re.A else "")
    return f"(?{prefix}){body}" if prefix else body


@functools.lru_cache(maxsize=1024)
def flat_landmark(pattern: str) -> regex.Pattern[str] | None:
    """``flat_pattern`` compiled as landmarks are (``compile_landmark``); None when it is not rewritten."""
    rewritten = flat_pattern(pattern)
    if rewritten is None:
        return None
    try:
        return compile_landmark(rewritten)
    except Exception:  # never expected (the tests compile every rewriting), but then: the copy
        return None


def _braces_are_counts(pattern: str) -> bool:
    """Every unescaped ``{`` opens a count (``{2}``, ``{2,}``, ``{2,5}``, ``{,5}``)."""
    for at, char in enumerate(pattern):
        if char == "{":
            backslashes = len(pattern[:at]) - len(pattern[:at].rstrip("\\"))
            if backslashes % 2 == 0 and not _COUNT.match(pattern, at):
                return False
    return True


def _char(code: int) -> str:
    char = chr(code)
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class _Writer:
    """Writes a parsed pattern out again, rewritten (``flat_pattern``)."""

    def __init__(self, constants: Any) -> None:
        self.c = constants

    def sequence(self, items: Any) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op: Any, av: Any) -> str:
        c = self.c
        if op is c.LITERAL:
            return "[ \\n]" if av == _SPACE else _NEVER if av == _NEWLINE else _char(av)
        if op is c.NOT_LITERAL:
            return "[^ \\n]" if av == _SPACE else _ANY if av == _NEWLINE else f"[^{_char(av)}]"
        if op is c.ANY:
            return _ANY
        if op is c.IN:
            return self.charset(av)
        if op is c.BRANCH:
            return "(?:" + "|".join(self.sequence(branch) for branch in av[1]) + ")"
        if op is c.SUBPATTERN:
            group, add, remove, body = av
            if (add | remove) & ~(re.I | re.M | re.S | re.X):
                raise _Untranslated  # a scoped ``a``, ``u`` or ``L``
            inner = self.sequence(body)
            # Only case-folding still matters: the rewritten pattern holds no ``.``, ``^``, ``$`` or space to read.
            on, off = ("i" if add & re.I else ""), ("i" if remove & re.I else "")
            if on or off:
                inner = f"(?{on}{'-' + off if off else ''}:{inner})"
            return f"({inner})" if group is not None else f"(?:{inner})"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, body = av
            count = f"{{{low},{'' if high is c.MAXREPEAT else high}}}"
            lazy = "?" if op is c.MIN_REPEAT else "+" if op is c.POSSESSIVE_REPEAT else ""
            return f"(?:{self.sequence(body)}){count}{lazy}"
        if op is c.AT:
            return self.position(av)
        if op in (c.ASSERT, c.ASSERT_NOT):
            direction, body = av
            kind = ("=" if op is c.ASSERT else "!") if direction == 1 else ("<=" if op is c.ASSERT else "<!")
            return f"(?{kind}{self.sequence(body)})"
        if op is c.ATOMIC_GROUP:
            return f"(?>{self.sequence(av)})"
        raise _Untranslated  # backreferences, conditionals, anything else

    def position(self, at: Any) -> str:
        c = self.c
        if at in (c.AT_BEGINNING, c.AT_BEGINNING_STRING):
            return r"\A"  # ``^`` in any mode, on a text without newlines: its start only
        if at in (c.AT_END, c.AT_END_STRING):
            return r"\Z"  # ``$`` in any mode, on a text without newlines: its end only
        if at is c.AT_BOUNDARY:
            return r"\b"
        if at is c.AT_NON_BOUNDARY:
            return r"\B"
        raise _Untranslated

    def charset(self, items: Any) -> str:
        """A set, its reading of a newline made that of a space."""
        c = self.c
        negated = False
        space = newline = False
        parts: list[str] = []
        for op, av in items:
            if op is c.NEGATE:
                negated = True
            elif op is c.LITERAL:
                space, newline = space or av == _SPACE, newline or av == _NEWLINE
                parts.append(_char(av))
            elif op is c.RANGE:
                low, high = av
                space, newline = space or low <= _SPACE <= high, newline or low <= _NEWLINE <= high
                parts.append(f"{_char(low)}-{_char(high)}")
            elif op is c.CATEGORY and av.name in _CATEGORY_HOLDS_BOTH:
                both = _CATEGORY_HOLDS_BOTH[av.name]
                space, newline = space or both, newline or both
                parts.append(_CATEGORY_SOURCE[av.name])
            else:
                raise _Untranslated
        source = f"[{'^' if negated else ''}{''.join(parts)}]"
        if negated:
            space, newline = not space, not newline
        if space and not newline:
            return f"(?:{source}|\\n)"
        if newline and not space:
            return f"(?:(?!\\n){source})"
        return source

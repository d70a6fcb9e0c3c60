"""A landmark pattern read into a tree of its parts, for ``regex_check`` to build inputs that make it backtrack.

Only the shape matters there (what repeats, what each part can match), so the reading is lenient: it never
raises, and what it does not know (a backreference, a fuzzy count, a Unicode property) reads as something that
matches an ``a`` or nothing. Patterns are compiled by the engine before they get here, so their syntax is valid.
The standard library's own parser is private to it and changes between Python versions.

Nodes (tuples): ``("lit", char)``, ``("any",)``, ``("in", negated, items)`` with items ``("lit", char)``,
``("range", low, high)`` or ``("cat", letter)`` (``d``, ``D``, ``s``, ``S``, ``w``, ``W``), ``("group", body)``,
``("look", body)``, ``("branch", [body, ...])``, ``("repeat", least, most or None, body)`` and ``("empty",)``; a
body is a list of nodes.
"""

from __future__ import annotations

import re
from typing import Any

Node = tuple[Any, ...]

_COUNT = re.compile(r"\{(\d*)(,?)(\d*)\}")
_CHAR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_HEX = {"x": 2, "u": 4, "U": 8}


def parse(pattern: str) -> list[Node]:
    """The pattern's parts, top level first."""
    reader = _Reader(pattern)
    body = reader.alternation()
    while reader.at < len(pattern):  # a stray ")": read on past it
        reader.at += 1
        body += reader.alternation()
    return body


class _Reader:
    def __init__(self, source: str) -> None:
        self.source, self.at = source, 0

    def _peek(self, text: str) -> bool:
        return self.source.startswith(text, self.at)

    def alternation(self) -> list[Node]:
        branches = [self.sequence()]
        while self._peek("|"):
            self.at += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else [("branch", branches)]

    def sequence(self) -> list[Node]:
        body: list[Node] = []
        while self.at < len(self.source) and not self._peek("|") and not self._peek(")"):
            atom = self.atom()
            body.append(self.quantified(atom))
        return body

    def quantified(self, atom: Node) -> Node:
        source = self.source
        while self.at < len(source):
            char = source[self.at]
            count = _COUNT.match(source, self.at) if char == "{" else None
            if char in "*+?":
                least, most = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
                self.at += 1
            elif count and (count[1] or count[3]):
                least = int(count[1] or 0)
                most = int(count[3]) if count[3] else (None if count[2] else least)
                self.at = count.end()
            else:
                return atom
            if self.at < len(source) and source[self.at] in "?+":  # lazy or possessive
                self.at += 1
            atom = ("repeat", least, most, [atom])
        return atom

    def atom(self) -> Node:
        char = self.source[self.at]
        self.at += 1
        if char == "(":
            return self.group()
        if char == "[":
            return self.charset()
        if char == "\\":
            return self.escape(in_set=False)
        if char == ".":
            return ("any",)
        if char in "^$":
            return ("empty",)
        return ("lit", char)

    def group(self) -> Node:
        kind = "group"
        if self._peek("?"):
            self.at += 1
            if self._peek("#"):  # a comment
                end = self.source.find(")", self.at)
                self.at = len(self.source) if end < 0 else end + 1
                return ("empty",)
            for opening in ("<=", "<!", "=", "!"):
                if self._peek(opening):
                    self.at += len(opening)
                    kind = "look"
                    break
            else:
                if self._peek("P<") or (self._peek("<") and not self._peek("<=")):
                    self.at = self.source.find(">", self.at) + 1 or len(self.source)
                elif self._peek("P=") or self._peek("P>") or self._peek("("):  # a reference, a conditional
                    depth = 1
                    while self.at < len(self.source) and depth:
                        depth += {"(": 1, ")": -1}.get(self.source[self.at], 0)
                        self.at += 1
                    return ("empty",)
                else:  # flags, scoped ("(?i:") or for the whole pattern ("(?i)"), or an atomic group ("(?>")
                    while self.at < len(self.source) and self.source[self.at] not in ":)":
                        self.at += 1
                    if self._peek(")"):
                        self.at += 1
                        return ("empty",)
                    self.at += 1
        body = self.alternation()
        if self._peek(")"):
            self.at += 1
        return (kind, body)

    def escape(self, *, in_set: bool) -> Node:
        if self.at >= len(self.source):
            return ("lit", "\\")
        char = self.source[self.at]
        self.at += 1
        if char in "dDsSwW":
            return ("cat", char) if in_set else ("in", False, [("cat", char)])
        if char in _CHAR_ESCAPES:
            return ("lit", _CHAR_ESCAPES[char])
        if char in _HEX:
            digits = self.source[self.at : self.at + _HEX[char]]
            try:
                code = int(digits, 16)
            except ValueError:
                return ("lit", char)
            self.at += len(digits)
            return ("lit", chr(min(code, 0x10FFFF)))
        if char == "b" and in_set:
            return ("lit", "\b")
        if char in "pPN" and self._peek("{"):  # a property or a named character
            self.at = self.source.find("}", self.at) + 1 or len(self.source)
            return ("lit", "a")
        if char.isdigit() or char in "bBAZzG":  # a backreference or a position
            while self.at < len(self.source) and self.source[self.at].isdigit():
                self.at += 1
            return ("empty",)
        return ("lit", char)

    def charset(self) -> Node:
        negated = self._peek("^")
        self.at += negated
        items: list[Node] = []
        first = True
        while self.at < len(self.source) and (first or not self._peek("]")):
            first = False
            char = self.source[self.at]
            self.at += 1
            item = self.escape(in_set=True) if char == "\\" else ("lit", char)
            if item[0] == "lit" and self._peek("-") and not self._peek("-]") and self.at + 1 < len(self.source):
                self.at += 1
                high_char = self.source[self.at]
                self.at += 1
                high = self.escape(in_set=True) if high_char == "\\" else ("lit", high_char)
                if high[0] == "lit":
                    item = ("range", ord(item[1]), ord(high[1]))
            if item[0] in ("lit", "range", "cat"):
                items.append(item)
        self.at += 1  # the closing "]"
        return ("in", negated, items)

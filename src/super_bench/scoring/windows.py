"""Landmarks searched in an output kept in a file (``spilled``), a window at a time, with the answer the search of
the whole output as one string gives (newlines as spaces, the reference's rule).

The file is read in windows of ``WINDOW`` characters, each beginning with the last ``OVERLAP`` of the one
before. What makes a window's answer the whole text's:

- The text every match contains (``landmarks.required_text``) is looked for first: where the output never holds
  it, nothing matches, and nothing more is read.
- A match found in a window is a match in the whole text, for a pattern without lookarounds, backreferences or
  conditionals (which could read past the window): the window holds the very characters of the text there,
  ``^`` and ``\\A`` cannot match at a window's first character unless the window starts the text (the search
  starts one character in), and ``\\b`` reads the character before. A match that ends at the window's last
  character counts only for a pattern with no assertion that reads the end of the text (``$``, ``\\Z``, ``\\b``,
  ``\\B``); else the next window, which starts before it, decides.
- No window finding a match proves there is none when every match is shorter than the overlap: a pattern with no
  repetition (``*``, ``+``, ``{...}``) and shorter than it.

Otherwise (a lookaround, say, or an unbounded repetition that no window matched) the output is read whole, as one
string, and searched as before: memory for that search only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from super_bench.spilled import blocks, open_output

if TYPE_CHECKING:
    import regex

WINDOW = 1 << 21  # characters
OVERLAP = 1 << 16
_READS_PAST = ("(?=", "(?!", "(?<=", "(?<!", "(?P=", "(?(", "\\G", "\\g", "\\K")
_READS_END = ("$", "\\Z", "\\z", "\\b", "\\B")


def search_file(pattern: regex.Pattern[str], piece: str, record: Path, name: str, timeout: float) -> bool:
    """Whether ``pattern`` matches the output in ``record``/``name`` with newlines as spaces; ``piece``: a
    space-free text every match contains ("" when none is known). ``TimeoutError`` as ``regex`` raises it."""
    import regex

    window, overlap = WINDOW, min(OVERLAP, WINDOW // 2)  # read here, so that a test can make them small
    source = pattern.pattern
    unsafe = bool(pattern.flags & regex.VERBOSE) or any(s in source for s in _READS_PAST) or _backreference(source)
    # A piece longer than the overlap could straddle two windows unseen: looked for on its own first.
    alone = bool(piece) and (unsafe or len(piece) > overlap)
    if alone and not _holds(record, name, piece, window):
        return False
    if unsafe:
        return _whole(pattern, record, name, timeout)
    ends = any(s in source for s in _READS_END)
    seen = not piece or alone
    for text, first, last in _windows(record, name, window, overlap):
        if not seen and piece not in text:
            continue  # every match holds the piece: none lies whole in this window
        seen = True
        match = pattern.search(text, 0 if first else 1, timeout=timeout)
        if match is not None and (last or not ends or match.end() < len(text)):
            return True
    if not seen:
        return False  # the piece is nowhere in the output
    if not any(c in source for c in "*+{") and len(source) < overlap - 2:
        return False  # every match is shorter than the overlap: some window held it whole
    return _whole(pattern, record, name, timeout)


def _windows(record: Path, name: str, window: int, overlap: int) -> Iterator[tuple[str, bool, bool]]:
    """The output with newlines as spaces, in windows: each with whether it is the first and the last."""
    with open_output(record, name) as file:
        read = blocks(file, window)
        carry, first = "", True
        ahead = next(read, "")
        while True:
            block, ahead = ahead, next(read, "")
            text = carry + block.replace("\n", " ")
            yield text, first, not ahead
            if not ahead:
                return
            carry, first = text[-overlap:], False


def _holds(record: Path, name: str, piece: str, window: int) -> bool:
    """Whether the output holds ``piece`` (which has no spaces: the same with newlines as spaces or not)."""
    carry = ""
    with open_output(record, name) as file:
        for block in blocks(file, window):
            text = carry + block
            if piece in text:
                return True
            carry = text[len(text) - len(piece) + 1 :] if len(piece) > 1 else ""
    return False


def _whole(pattern: regex.Pattern[str], record: Path, name: str, timeout: float) -> bool:
    with open_output(record, name) as file:  # its blocks, then the text: twice the output, for a moment
        text = "".join([block.replace("\n", " ") for block in blocks(file)])
    return pattern.search(text, timeout=timeout) is not None


def _backreference(source: str) -> bool:
    """Whether the pattern may hold a numbered backreference (``\\1``): read conservatively."""
    return any(source[i] == "\\" and source[i + 1 : i + 2] in tuple("123456789") for i in range(len(source)))

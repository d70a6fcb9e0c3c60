"""Where a printed number is no evidence of a result (docs/verification.md, "What is no evidence"): inside a
progress meter or a counter, as a line number prefixing a file's line, after a hyper-parameter's name, in a
path. Text beside a meter on the same line is evidence (a log dict printed right after a tqdm bar).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Contexts that are no evidence of a result (docs/verification.md, "What is no evidence"): progress meters
# (tqdm's ``80%|███ | 8/10 [00:01<00:00, 7.40it/s]``, its ``0it [00:00, ?it/s]``; pip's ``━━━ 1.2/3.4 MB 5.0 MB/s
# eta 0:00:01``; git's ``Receiving objects: 11% (8/73)``; wget's ``0%[   ] 0  --.-KB/s``; ``[0.00%]``) and counters
# (``(1/9)``), but not the text beside them on the same line; a hyper-parameter's value (``--learning_rate
# 3e-5``, ``lr=2e-5``); a line number that prefixes a file's line (``12:`` of a view, ``  12\t`` of ``cat -n``);
# paths.
# tqdm's time and rate in brackets, ``[00:01<00:02, 7.40it/s`` (a postfix after them, ``loss=0.85]``, is not
# the meter's).
_TIMES = r"\[[0-9:?]+(?:<[0-9:?]+)?(?:,\s*\??[0-9.]*\s?(?:[kMG]?it/s|s/it|[kMG]?B/s))?"
_METER = re.compile(
    rf"[0-9]+%\s?\|[^|\n]{{0,200}}\|(?:\s*[0-9.]+[kMG]?/[0-9.?]+[kMG]?)?(?:\s*{_TIMES})?"
    rf"|[0-9.]+[kMG]?/[0-9.?]+[kMG]?\s*{_TIMES}"
    rf"|\b[0-9]+it\b(?:\s*{_TIMES})?"
    r"|━+[^\n]{0,120}?(?:eta\s+\S+|[kMG]?B/s)"
    r"|(?:objects|deltas|files|[Ff]iles)[:,] +[0-9]+% \([0-9]+/[0-9]+\)[^\n]{0,80}"
    r"|[0-9]+%\s?\[[^\]\n]{0,120}\][^\n]{0,60}?(?:[KMG]?B/s|--\.-KB/s)(?:\s+(?:eta|in)\s+\S+)?"
    r"|\[\s*[0-9.]+%\s*\]|\([0-9]+/[0-9]+\)"
    r"|[0-9.]+\s?(?:it/s|s/it|[kMG]?B/s)"
)
_HYPER = re.compile(
    r"(?:\b|_)(?:lr|learning[_ -]?rate|weight[_ -]?decay|warm[_ -]?up\w*|dropout|adam\w*|eps(?:ilon)?|momentum|"
    r"seed|batch[_ -]?size|max[_ -]?(?:len\w*|seq\w*|steps|grad\w*)|grad\w*clip\w*|num[_ -]?epochs|epochs|"
    r"label[_ -]?smoothing|temperature|top[_ -]?[pk])['\"]?\s*[:=|]?\s*['\"]?\Z",
    re.IGNORECASE,
)
_LINE_NUMBER = re.compile(r"[ \t]*[0-9]+(?::|\t)")
# pip's lines about packages (``Requirement already satisfied: tokenizers<0.20,>=0.19``): versions, not results.
_PIP_LINE = re.compile(
    r"\s*(?:Requirement already satisfied|Collecting|Downloading|Using cached|Installing|Successfully|Building wheel|"
    r"Created wheel|Stored in directory|Found existing installation|Uninstalling|Attempting uninstall|Obtaining|"
    r"Preparing metadata|Getting requirements)\b"
)
_TOKEN_END = re.compile(r"[\s'\"`,;()\[\]{}<>=]")


class LineMemo:
    """What ``not_evidence`` read of the last line it was asked about, kept between calls on one text: a
    progress bar redrawn with carriage returns is one line of up to 100 MB with millions of numbers on it,
    and each line is then read once (its meters found as the numbers asked about move along it), never copied."""

    def __init__(self) -> None:
        self.line: tuple[int, int] = (-1, -1)
        self.pip = False
        self.number_end = -1  # the end of a line number prefixing the line, or -1
        self.meters: Iterator[re.Match[str]] = iter(())
        self.meter: tuple[int, int] | None = None  # the first meter not wholly before the last number asked about
        self.last = -1

    def read(self, text: str, start: int, end: int) -> None:
        """Read the line around ``text[start:end]``, unless it is the line read last and ``start`` comes later."""
        if self.line[0] <= start and end <= self.line[1] and start >= self.last:
            return
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = line_end if line_end >= 0 else len(text)
        # Matched in place with bounds, not in a copy: the characters around the bounds are newlines or
        # nothing, which ``\b`` reads alike.
        self.line = (line_start, line_end)
        self.pip = _PIP_LINE.match(text, line_start, line_end) is not None
        number = _LINE_NUMBER.match(text, line_start, line_end)
        self.number_end = number.end() if number is not None else -1
        self.meters = _METER.finditer(text, line_start, line_end)
        self.meter = (-1, -1)
        self.last = start

    def in_meter(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` overlaps a meter of the line read; calls move forward along the line."""
        self.last = start
        while self.meter is not None and self.meter[1] <= start:
            match = next(self.meters, None)
            self.meter = None if match is None else match.span()
        return self.meter is not None and self.meter[0] < end


def not_evidence(text: str, start: int, end: int, memo: LineMemo | None = None) -> bool:
    """Whether the number printed at ``text[start:end]`` stands where no result is shown: in a progress meter or a
    counter (text beside them on the line counts), as a line number, after a hyper-parameter's name, or in a path.
    ``memo``: kept between calls on the same text, it reads each line once while the numbers move forward."""
    line = memo if memo is not None else LineMemo()
    line.read(text, start, end)
    line_start, line_end = line.line
    if line.in_meter(start, end):
        return True
    if line.number_end > start and "." not in text[start:end]:
        return True
    if line.pip:
        return True
    if _HYPER.search(text, max(line_start, start - 48), start):
        return True
    # The whitespace-delimited token around it holds a path separator next to a letter: a path.
    left = start
    while left > line_start and not _TOKEN_END.match(text[left - 1]):
        left -= 1
    right = end
    while right < line_end and not _TOKEN_END.match(text[right]):
        right += 1
    token = text[left:right]
    return ("/" in token or "\\" in token) and re.search(r"[A-Za-z_][/\\]|[/\\][A-Za-z_.]", token) is not None

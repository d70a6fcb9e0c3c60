"""Which lines of a step's output the failure rules read: those that hold a mark of a failure, and the
exception line that ends each traceback (Python's or IPython's, ANSI-coloured or not), whatever the
exception's name (``ExpectedMoreSplits: {'unsupervised'}``, ``pyarrow.lib.ArrowInvalid: ...``).
An output may have millions of lines: only these are read, each cut short.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from super_bench.reading import strip_ansi

# An error line is short; a longer one is read in its first characters, so that no line makes reading slow.
LINE_CHARS = 1000
# The lines worth reading: every mark below holds one of these (an output may have millions of lines).
_CANDIDATE = re.compile(r"rror|ERROR|xception|Exit|Failure|File \"|│|not found|Killed|404|CUDA|GPU|NVIDIA|can't open")
# The exception line that ends a traceback, whatever its name: at the margin, a (dotted) name, then a colon
# and its message, or the name alone.
RAISED = re.compile(r"^(?P<name>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(?P<msg>.*))?$")
_NOT_RAISED = ("Traceback", "During handling", "The above exception", "Cell In", "File ", "Input In")
_TRACEBACK_LINES = 400  # read after a traceback's header for its exception line
# A program waiting for an answer at a terminal (wandb's account question, a y/n confirmation, a password).
PROMPT = re.compile(
    r"(?:Enter your choice|\(y/n\)|\[y/N\]|\[Y/n\]|Password:|Do you want to continue|Proceed \(|"
    r"wandb: \(\d\)|input\(|Press (?:enter|any key))[^\n]*\s*\Z",
    re.IGNORECASE,
)
_MAX_TRACEBACKS = 100
# What a harness appends to a cell that ran out of time (SUPER's wording), not the program's output.
_HARNESS_NOTE = ("Your command has already run", "Action:", "Thought:", "or:")


def read_lines(text: str) -> Iterator[tuple[str, bool]]:
    """The lines worth reading, in order, each once: those that hold a mark, and the exception line that ends
    each traceback whatever the exception's name (``ExpectedMoreSplits: ...``), flagged True."""
    ends = traceback_ends(text)
    at = 0
    for start, raw in _candidate_lines(text):
        while at < len(ends) and ends[at][0] < start:
            yield ends[at][1], True
            at += 1
        if at < len(ends) and ends[at][0] == start:
            yield ends[at][1], True
            at += 1
            continue
        yield raw, False
    for _, raw in ends[at:]:
        yield raw, True


def traceback_ends(text: str) -> list[tuple[int, str]]:
    """``(offset, line)`` of the exception line of each traceback (Python's or IPython's, ANSI-coloured or
    not): the first line after its header that starts at the margin with a name and a colon, or a lone name."""
    found: list[tuple[int, str]] = []
    at = text.find("Traceback (most recent call last)")
    while at >= 0 and len(found) < _MAX_TRACEBACKS:
        pos = text.find("\n", at) + 1
        for _ in range(_TRACEBACK_LINES):
            if pos <= 0 or pos >= len(text):
                break
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = strip_ansi(text[pos : min(end, pos + LINE_CHARS * 2)]).rstrip()
            if RAISED.match(line) and not line.startswith(_NOT_RAISED):
                found.append((pos, line))
                break
            pos = end + 1
        at = text.find("Traceback (most recent call last)", max(pos, at + 1))
    return found


def _candidate_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` that hold a mark, in order, each once, with where each starts."""
    at = 0
    while True:
        mark = _CANDIDATE.search(text, at)
        if mark is None:
            return
        start = text.rfind("\n", 0, mark.start()) + 1
        end = text.find("\n", mark.end())
        end = len(text) if end < 0 else end
        yield start, text[start:end]
        at = end + 1


def before_note(text: str) -> str:
    """The output before the harness's note that the cell ran out of time."""
    at = text.find("Your command has already run")
    return (text if at < 0 else text[:at]).rstrip()


def last_line(text: str) -> str:
    """The last line of output that the program printed: not a harness note about the cell's time limit."""
    for raw in reversed(text.splitlines()):
        line = strip_ansi(raw).strip()
        if line and not line.startswith(_HARNESS_NOTE) and line.strip("`").strip():
            return line
    return ""

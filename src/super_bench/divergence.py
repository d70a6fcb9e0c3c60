"""Where a replay parted from its recording: the first agent step whose outcome, exception type or exit
status differs, and what kind of divergence it is (docs/verification.md, "Where a replay diverges").

Pure functions of two lists of steps (the recorded agent steps and the replayed ones, submissions left
out, paired in order), used by the replay agent and by ``super-bench verify``. The kinds:

- ``environment``: the replay's step failed on an install, an import or a download (or a file that one
  would have brought) where the recording's did not: the replay's environment, not the actions, differs;
- ``nondeterminism``: every step ended as recorded, but a step printed other numbers;
- ``answer_not_reproduced``: any other difference, or none that the steps show.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import Field

from super_bench._pydantic import Model
from super_bench.trajectory import Step

DivergenceKind = Literal["environment", "nondeterminism", "answer_not_reproduced"]
SHOWN_CHARS = 200

# The last line naming an exception in a cell's output: a traceback's summary ("ModuleNotFoundError: No
# module named 'x'"), possibly qualified ("numpy.core._exceptions._UFuncNoLoopError").
_EXCEPTION = re.compile(r"^\s*(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt))\b", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What an install, an import or a download that failed prints (Python's, pip's, git's, curl's, wget's).
_ENVIRONMENT = re.compile(
    r"ModuleNotFoundError|ImportError|No module named|cannot import name|"
    r"Could not find a version|No matching distribution|Failed building wheel|Failed to build|"
    r"error: subprocess-exited-with-error|Could not resolve host|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Connection refused|ConnectionError|HTTPError|URLError|"
    r"unable to access|Could not read from remote repository|FileNotFoundError|No such file or directory|"
    r"command not found|LocalEntryNotFoundError|OfflineModeIsEnabled",
    re.I,
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


class Divergence(Model):
    """The first difference between a recording and its replay."""

    kind: DivergenceKind
    step: int | None = Field(
        description="The recorded step's index (as in the recorded trajectory); null when no step differs"
    )
    recorded: str | None = Field(None, description="How the recorded step ended, shortened")
    replayed: str | None = Field(None, description="How the replayed step ended, shortened")


class Signature(NamedTuple):
    """How a step ended, as far as a replay must repeat it."""

    outcome: str
    exception: str | None
    exit_code: int | None

    @property
    def failed(self) -> bool:
        return self.outcome != "ok" or self.exception is not None or self.exit_code not in (None, 0)


def signature(step: Step) -> Signature:
    found = _EXCEPTION.findall(_ANSI.sub("", step.raw_output))
    return Signature(step.outcome, found[-1] if found else None, step.exit_code)


def describe(step: Step | None, stopped: str | None = None) -> str:
    """A step's ending in a line: its outcome, exit status, and the line that says what went wrong."""
    if step is None:
        return f"not run: the replay stopped before it ({stopped or 'no more steps'})"
    sig = signature(step)
    head = sig.outcome + (f", exit status {sig.exit_code}" if sig.exit_code not in (None, 0) else "")
    lines = [line.strip() for line in _ANSI.sub("", step.raw_output).splitlines() if line.strip()]
    telling = [line for line in lines if _EXCEPTION.match(line) or _ENVIRONMENT.search(line)]
    detail = (telling or lines or [""])[-1]
    return shorten(f"{head}: {detail}" if detail else head)


def shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def replayed_steps(steps: Sequence[Step]) -> list[Step]:
    """The steps a replay repeats and is compared on: the agent's, without its submissions."""
    return [s for s in steps if not s.pre_executed and s.action.type != "submit"]


def first_difference(recorded: Sequence[Step], replayed: Sequence[Step]) -> int | None:
    """The position of the first pair of steps that ended differently (a step the replay never reached
    counts), or None."""
    for i, step in enumerate(recorded):
        if i >= len(replayed) or signature(step) != signature(replayed[i]):
            return i
    return None


def first_error(steps: Sequence[Step]) -> tuple[int, Signature] | None:
    """Where and how a run first failed: its first step that raised, timed out or exited non-zero."""
    return next(((i, signature(s)) for i, s in enumerate(steps) if signature(s).failed), None)


def failed_alike(recorded: Sequence[Step], replayed: Sequence[Step], stops: tuple[str | None, str | None]) -> bool:
    """A run that submitted nothing, reproduced: the same stop, and the same first error at the same step."""
    return stops[0] == stops[1] and first_error(recorded) == first_error(replayed)


def divergence(recorded: Sequence[Step], replayed: Sequence[Step], stopped: str | None = None) -> Divergence:
    """Why a replay did not reproduce its recording (the caller decides that it did not): the first step
    that ended differently, else the first whose numbers differ, else no step. ``stopped``: how the replay
    ended, said of the steps it never reached."""
    at = first_difference(recorded, replayed)
    if at is not None:
        theirs = replayed[at] if at < len(replayed) else None
        environment = theirs is not None and _broke_on_environment(recorded[at], theirs)
        return Divergence(
            kind="environment" if environment else "answer_not_reproduced",
            step=recorded[at].index,
            recorded=describe(recorded[at]),
            replayed=describe(theirs, stopped),
        )
    for mine, theirs in zip(recorded, replayed):
        lines = _differing_numbers(mine.raw_output, theirs.raw_output)
        if lines is not None:
            return Divergence(kind="nondeterminism", step=mine.index, recorded=lines[0], replayed=lines[1])
    return Divergence(kind="answer_not_reproduced", step=None)


def _broke_on_environment(recorded: Step, replayed: Step) -> bool:
    if not signature(replayed).failed:
        return False
    return bool(_ENVIRONMENT.search(replayed.raw_output)) and not _ENVIRONMENT.search(recorded.raw_output)


def _differing_numbers(mine: str, theirs: str) -> tuple[str, str] | None:
    """The first pair of lines whose numbers differ (lines paired in order), shortened; None if none do."""
    if _NUMBER.findall(mine) == _NUMBER.findall(theirs):
        return None
    a, b = mine.splitlines(), theirs.splitlines()
    for x, y in zip(a, b):
        if _NUMBER.findall(x) != _NUMBER.findall(y):
            return shorten(x.strip()), shorten(y.strip())
    return shorten((a[len(b)] if len(a) > len(b) else "").strip()), shorten(
        (b[len(a)] if len(b) > len(a) else "").strip()
    )

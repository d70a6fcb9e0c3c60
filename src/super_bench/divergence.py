"""Where a replay parted from its recording: the first agent step whose outcome, exception type or exit
status differs, and what kind of divergence it is (docs/verification.md, "Where a replay diverges").

Pure functions of two lists of steps (the recorded agent steps and the replayed ones, submissions left
out, paired in order), used by the replay agent and by ``super-bench verify``. A recording read as it is:
an exit status it does not hold (the paper's notebooks record none) is unknown, not a difference. The
first step where the replay met an error the recording did not have is named first; its kind:

- ``network``: the replay's step failed to reach a host (a name not resolved, a connection refused, pip
  retrying) where the recording's did not;
- ``environment``: it failed on an install, an import or a download (or a file that one would have
  brought), or timed out where the recording did not: the replay's environment, not the actions, differs;
- ``agent``: any other error of the actions themselves, or a step that ended otherwise (a recorded error
  the replay did not meet, a step never reached);
- ``nondeterminism``: every step ended as recorded, but a step printed other numbers;
- ``answer_not_reproduced``: no step shows a difference.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import Field

from super_bench._pydantic import Model
from super_bench.trajectory import Step

DivergenceKind = Literal["environment", "network", "agent", "nondeterminism", "answer_not_reproduced"]
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
# What a step that could not reach a host prints (resolver's, socket's, pip's retries, requests', git's,
# curl's, the Hugging Face Hub's offline errors): checked before the environment's, which it overlaps.
_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Name or service not known|"
    r"Network is unreachable|Connection refused|Failed to establish a new connection|NewConnectionError|"
    r"Max retries exceeded|ConnectionError|ProxyError|unable to access '|Could not read from remote repository|"
    r"getaddrinfo failed|OfflineModeIsEnabled|LocalEntryNotFoundError|ConnectTimeout",
    re.I,
)
# A replay that ran out of actions ran every recorded one: it ended as a recording stopped by its model (a
# submission, left out of the replay; tokens, cost or steps spent; unreadable replies) or by a budget
# it was replayed without (an imported run's), but not as one whose kernel broke.
_NOT_RUN_OUT = frozenset({"environment_broken", "infra_error", "cancelled"})
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


def _seen_as(recorded: Step, replayed: Step) -> Signature:
    """The replayed step's ending as far as its recording can tell: without an exit status where the
    recording holds none, unless the replay's failed one printed a network or environment error the
    recording's output does not have (pip failing for want of the network exits 1 and raises nothing); and
    a cell that raised the exception the recording printed, where the recording kept no outcome but its
    output (the paper's notebooks: every step ``ok``, tracebacks as text), ended as recorded."""
    sig = signature(replayed)
    if recorded.outcome == "ok" and sig.outcome == "error" and sig.exception == signature(recorded).exception:
        sig = sig._replace(outcome="ok")
    if recorded.exit_code is not None or sig.exit_code in (None, 0):
        return sig if recorded.exit_code is not None else sig._replace(exit_code=None)
    return sig if _trouble(replayed, recorded) else sig._replace(exit_code=None)


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
    counts; an exit status the recording does not hold does not), or None."""
    for i, step in enumerate(recorded):
        if i >= len(replayed) or signature(step) != _seen_as(step, replayed[i]):
            return i
    return None


def first_new_error(recorded: Sequence[Step], replayed: Sequence[Step]) -> int | None:
    """The position of the first step where the replay met an error the recording did not have (or
    another one), or None; steps the replay never reached are not errors."""
    for i, (mine, theirs) in enumerate(zip(recorded, replayed)):
        seen = _seen_as(mine, theirs)
        if seen.failed and seen != signature(mine):
            return i
    return None


def first_error(steps: Sequence[Step]) -> tuple[int, Signature] | None:
    """Where and how a run first failed: its first step that raised, timed out or exited non-zero."""
    return next(((i, signature(s)) for i, s in enumerate(steps) if signature(s).failed), None)


def same_first_error(recorded: Sequence[Step], replayed: Sequence[Step]) -> bool:
    """Whether the replay first failed where and as the recording did, read as the recording can tell."""
    seen = [_seen_as(mine, theirs) for mine, theirs in zip(recorded, replayed)]
    ours = next(((i, sig) for i, sig in enumerate(seen) if sig.failed), None)
    if ours is None and len(replayed) > len(recorded):
        ours = first_error(replayed[len(recorded) :])
        ours = None if ours is None else (ours[0] + len(recorded), ours[1])
    return first_error(recorded) == ours


def ended_alike(recorded: str | None, replayed: str | None) -> bool:
    """Whether a replay stopped as its recording did: the same reason, or its actions ran out (every
    recorded action replayed) where the recording's model or a budget stopped it."""
    if recorded == replayed:
        return True
    return replayed == "agent_stopped" and recorded is not None and recorded not in _NOT_RUN_OUT


def failed_alike(recorded: Sequence[Step], replayed: Sequence[Step], stops: tuple[str | None, str | None]) -> bool:
    """A run that submitted nothing, reproduced: it ended alike, with the same first error at the same step."""
    return ended_alike(*stops) and same_first_error(recorded, replayed)


def divergence(recorded: Sequence[Step], replayed: Sequence[Step], stopped: str | None = None) -> Divergence:
    """Why a replay did not reproduce its recording (the caller decides that it did not): the first step
    where the replay met an error the recording did not have, else the first that ended differently, else
    the first whose numbers differ, else no step. ``stopped``: how the replay ended, said of the steps it
    never reached."""
    at = first_new_error(recorded, replayed)
    if at is None:
        at = first_difference(recorded, replayed)
    if at is not None:
        theirs = replayed[at] if at < len(replayed) else None
        return Divergence(
            kind=_kind(recorded[at], theirs),
            step=recorded[at].index,
            recorded=describe(recorded[at]),
            replayed=describe(theirs, stopped),
        )
    for mine, theirs in zip(recorded, replayed):
        lines = _differing_numbers(mine.raw_output, theirs.raw_output)
        if lines is not None:
            return Divergence(kind="nondeterminism", step=mine.index, recorded=lines[0], replayed=lines[1])
    return Divergence(kind="answer_not_reproduced", step=None)


def _kind(recorded: Step, replayed: Step | None) -> DivergenceKind:
    """The class of a step that ended otherwise: what the failing side met that the other did not (a
    recorded failure the replay did not meet is classed by the recording's output)."""
    if replayed is None:
        return "agent"
    failing, other = (replayed, recorded) if _seen_as(recorded, replayed).failed else (recorded, replayed)
    found = _trouble(failing, other)
    if found is None and failing.outcome == "timeout" and other.outcome != "timeout":
        return "environment"  # the same actions, slower here or there: the machine, its network, its caches
    return found or "agent"


def _trouble(failing: Step, other: Step) -> DivergenceKind | None:
    """``network`` or ``environment`` when ``failing``'s output says so and ``other``'s does not."""
    text, before = _ANSI.sub("", failing.raw_output), _ANSI.sub("", other.raw_output)
    if _NETWORK.search(text) and not _NETWORK.search(before):
        return "network"
    if _ENVIRONMENT.search(text) and not _ENVIRONMENT.search(before):
        return "environment"
    return None


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

"""Which errors of an episode were never resolved: the blockers its failure is blamed on.

A *run* is an execute step that runs a script or a module (``python train.py``, ``bash run.sh``,
``python -m x``) or Python code, or a wait on such a cell. An error a run met is **resolved** when a later
run of the same script gets past it: it ends without that error, having started (a syntax error, a bad
command line or a broken shell script stops it before it starts, and so proves nothing). A wrong-version
library the agent patched around is got past (what its patches then raise is its own), but not a missing
file by runs that fail in the repository's code (on empty or stand-in data). A
``ModuleNotFoundError`` followed by a pip install and a run that fails elsewhere, or succeeds, is resolved;
one seen again in the last run is not.

A failed ``pip install`` is resolved when a later install of each requirement it asked for (at the same
pinned version, if pinned) succeeds. Agents often drop a pin that cannot be met and go on, so an
unresolved install is blamed only when nothing ran after it, or when what ran after it failed the way a
wrong version fails: an import error, or an ``AttributeError``/``TypeError`` never resolved.

A file never resolved is a ``resource`` only where a download of the episode failed that the agent did not
guess: one a program made, or of an address the task or an earlier output showed. Otherwise the file, and a
download from an address the agent made up, are the agent's (``no_experiment``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from super_bench.analysis._model import Cause
from super_bench.analysis._signals import Problem, command, local_names, pip_specs, problems, repository_dirs
from super_bench.reading import Deed, edited_files
from super_bench.trajectory import Step

_CAUSES: tuple[str, ...] = ("environment", "resource", "compute", "repository_error", "agent")
# An error in code the agent changed is its own: the experiment was never run as it stands.
_AS_CAUSE: dict[str, Cause] = {"agent": "no_experiment"}
# What a library of another version raises in code written for the one it expected.
VERSION_MISMATCH = ("AttributeError", "TypeError")
# Problems a later run gets past only by ending on something other than a failure of the given kind: a file that
# was missing, got round so that the repository's code then failed (on empty data, or a stand-in for it).
_NOT_PAST: dict[str, str] = {"resource": "repository_error"}
# Problems any later run resolves by getting past them (ending on something else): a missing module or
# command, a failed download. The agent may have found another way (a pip install, another source).
_PASSED = ("ModuleNotFoundError", "ImportError", "command:", "404")
_MISSING_PATH = re.compile(r"No such file or directory: '(?P<path>[^']+)'")
# A local file or folder not there (not a model or dataset id that no hub knows).
_LOCAL_MISSING = re.compile(
    r"No such file or directory|does not exist|not exist|doesn't exist|FileNotFoundError|"
    # A model named by a path (``outputs/run/checkpoint-1``, ``./model``): a hub's ids have one slash at most.
    r"it looks like (?:\.{0,2}/|[^\s/']+/[^\s/']+/)\S* is not the path to a directory",
    re.I,
)
# A fetch that failed: a server's refusal or error, or no route to it.
_FETCH_FAILED = re.compile(
    r"ERROR [45]\d\d\b|HTTP Error [45]\d\d|[45]\d\d (?:Client|Server) Error|\b[45]\d\d: (?:Not Found|Forbidden|"
    r"Internal Server Error)|Repository Not Found|is a gated|Max retries exceeded|Could not resolve host|"
    r"Temporary failure in name resolution|Failed to establish a new connection"
)
_FETCH_CHARS = 200_000
_ADDRESS = re.compile(r"(?:https?|ftp)://[^\s'\"<>()\[\]{}]+")
# A command that only prints or lists files (and runs nothing after: no ``&&``, ``;``, ``|``): a file that holds
# a server's error page is no download failing there.
_READS_ONLY = re.compile(r"^\s*!?\s*(?:head|tail|cat|less|more|ls|wc|file|echo)\b[^;&|`$]*$")
_LISTS = re.compile(r"(?:^|[!\s;&|])(?:ls|find|tree)\b")
_LISTING_CHARS = 100_000
_PIN = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]*)(?:\[[^\]]*\])?(?P<pin>[=<>!~].*)?$")


@dataclass
class Run:
    step: Step
    identity: frozenset[str]
    problems: list[Problem]

    @property
    def experiment(self) -> bool:
        """Whether it ran code (a script, a module, a cell), not only downloaded something."""
        return any(not name.startswith("download:") for name in self.identity)

    @property
    def started(self) -> bool:
        """Whether the program started: it did not stop at a syntax error or its command line only."""
        return not self.problems or any(p.kind != "early" for p in self.problems)

    @property
    def final(self) -> Problem | None:
        """The problem that ended the run: the last one shown (those before it, the run got past)."""
        real = [p for p in self.problems if p.kind != "early"]
        # A script line its edit broke (``run.sh: line 25: --lr: command not found``) after a program that ran
        # and failed: that failure, not the stray option, ended the run.
        while len(real) > 1 and real[-1].key == "broken-script":
            real.pop()
        return real[-1] if real else None


@dataclass
class Blocker:
    """An error never resolved: its class, where it was first and last seen, and the line that shows it."""

    cause: Cause
    first: int
    step: Step
    line: str
    confidence: float
    note: str = field(default="")
    reason: str = field(default="")  # where the class's usual reason does not say it


def runs(deeds: list[Deed]) -> list[Run]:
    """The episode's runs (``reading``: scripts, cells, waits on them; not views, searches or edits of
    files), in order, each with the problems its output shows."""
    steps = [d.step for d in deeds]
    repos = repository_dirs(steps)
    local = local_names(steps)
    found: list[Run] = []
    current: frozenset[str] = frozenset()
    # The files edited before each step, gathered as the steps go by and read in place by each run's problems
    # (never copied: analysis stays linear in the episode, however many files it changes).
    edited: set[str] = set()
    for deed in deeds:
        if deed.kind == "run" or (deed.kind == "install" and deed.runs):
            current = deed.runs
            found.append(Run(deed.step, current, problems(deed.step, repos, local, edited)))
        elif deed.kind == "wait" and current:
            found.append(Run(deed.step, current, problems(deed.step, repos, local, edited)))
        edited |= edited_files([deed])
    return found


def blockers(steps: list[Step], attempts: list[Run], given: Sequence[str] = ()) -> list[Blocker]:
    """Every error of the episode never resolved, in the order first seen; ``attempts`` are its ``runs``;
    ``given``: what the agent was given before its first step (the task, the cells run for it)."""
    found: dict[tuple[str, str], Blocker] = {}
    for run, resolved in zip(attempts, _resolutions(attempts)):
        problem = run.final
        if problem is None or problem.kind not in _CAUSES or resolved:
            continue
        key = (problem.kind, problem.key)
        if key in found:
            found[key].step, found[key].line = run.step, problem.line
        else:
            cause = _AS_CAUSE.get(problem.kind, cast(Cause, problem.kind))
            found[key] = Blocker(cause, run.step.index, run.step, problem.line, 0.7)
            if problem.key.startswith("asked:"):
                found[key].reason = "the agent's command asked the program for a name it does not know"
    result = list(found.values())
    missing = [b for b in result if b.cause == "resource"]
    # Read once per episode, and only where a file is missing: whether a download of the episode failed, and one
    # the agent did not guess. Printing a file that holds a server's error page is no download failing there.
    failing = [s for s in steps if _FETCH_FAILED.search(s.raw_output[:_FETCH_CHARS])] if missing else []
    shown = _addresses_shown(steps, failing, given)
    fetch_failed = any(not _prints_only(command(s)) and not _guessed(s, shown) for s in failing)
    for blocker in missing:
        if _FETCH_FAILED.search(blocker.line) and _guessed(blocker.step, shown):
            blocker.cause = "no_experiment"
            blocker.reason = "the agent fetched from addresses it guessed, which the server does not know"
        elif _listed_before(blocker.line, blocker.step.index, steps):
            blocker.cause = "no_experiment"  # the file was there, the run looked for it elsewhere
            blocker.reason = "a file the run wanted was missing where it looked, though an earlier listing showed it"
        elif _LOCAL_MISSING.search(blocker.line) and not fetch_failed:
            # Nothing the agent fetched failed: it never fetched the file, or put it elsewhere, or ran from the
            # wrong folder. A file missing for want of a step the agent skipped is the agent's, not a resource
            # that could not be had.
            blocker.cause = "no_experiment"
            blocker.reason = "a file the run needed was never there, and no attempt to fetch it failed"
    result += _installs(steps, attempts, result)
    return sorted(result, key=lambda b: b.first)


def _prints_only(code: str) -> bool:
    return bool(code) and all(_READS_ONLY.match(line) for line in code.splitlines() if line.strip())


def _guessed(step: Step, shown: dict[str, int]) -> bool:
    """Whether the step fetched only from addresses the agent made up: its command names addresses, and neither
    the task nor an earlier output showed any of them. A program's own download (no address in the command) is
    the repository's or a library's. That a guessed address does not exist shows nothing that could not be had."""
    addresses = _addresses(command(step))
    return bool(addresses) and not any(shown.get(a, step.index) < step.index for a in addresses)


def _addresses_shown(steps: list[Step], failing: list[Step], given: Sequence[str]) -> dict[str, int]:
    """For each address the commands of ``failing`` (the steps that show a failed download) name, the first step
    whose output showed it (-1: what the agent was given). A step does not show the addresses its own command
    names: a download prints its own address. One pass over the outputs' first characters; only the addresses
    asked about are kept, however many an output holds."""
    wanted = {a for s in failing for a in _addresses(command(s))}
    if not wanted:
        return {}
    first = {a: -1 for text in given for a in _addresses(text[:_FETCH_CHARS]) if a in wanted}
    for step in steps:
        named = set(_addresses(command(step)))
        for address in _addresses(step.raw_output[:_FETCH_CHARS]):
            if address in wanted and address not in named:
                first.setdefault(address, step.index)
    return first


def _addresses(text: str) -> list[str]:
    return [a.rstrip(".,;:") for a in _ADDRESS.findall(text)]


def _listed_before(line: str, before: int, steps: list[Step]) -> bool:
    """Whether a missing file's name (``No such file or directory: 'data/x/train.txt'``) was shown by an earlier
    step's listing (``ls``, ``find``): the file was there, the run looked for it elsewhere."""
    found = _MISSING_PATH.search(line)
    if found is None:
        return False
    name = found.group("path").rstrip("/").rsplit("/", 1)[-1]
    if not name or "." not in name:
        return False
    word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
    return any(
        s.index < before and word.search(s.raw_output[:_LISTING_CHARS]) is not None
        for s in steps
        if _LISTS.search(str(s.action.content or "")[:200])
    )


def _resolutions(attempts: list[Run]) -> list[bool]:
    """For each run, whether a later run of the same script got past the problem that ended it; for a missing
    module or command or a failed download, whether any later run got past its imports and inputs (ended on
    something else). One pass from the end, so an episode of thousands of runs costs as many steps: for each
    script, the distinct ways its later runs ended, two at most (two differ, so one differs from any problem)."""
    endings: dict[str, set[str | None]] = {}  # script -> how later runs of it ended (a problem's key, or None)
    # Per kind of _NOT_PAST: the same, leaving out the later runs that do not get past that kind of problem.
    past: dict[str, dict[str, set[str | None]]] = {kind: {} for kind in _NOT_PAST}
    passed_later = False
    resolved = [False] * len(attempts)
    for i in range(len(attempts) - 1, -1, -1):
        run = attempts[i]
        problem = run.final
        if problem is not None:
            later = past[problem.kind] if problem.kind in past and not problem.key.startswith(_PASSED) else endings
            resolved[i] = (problem.key.startswith(_PASSED) and passed_later) or any(
                len(ends) > 1 or (len(ends) == 1 and problem.key not in ends)
                for ends in (later.get(name, set()) for name in run.identity)
            )
        if run.started:
            final = run.final
            tables = [endings] + [
                past[k] for k, not_past in _NOT_PAST.items() if final is None or final.kind != not_past
            ]
            for name in run.identity:
                for table in tables:
                    ends = table.setdefault(name, set())
                    if len(ends) < 2:
                        ends.add(None if final is None else final.key)
            if final is not None and final.kind not in ("environment", "resource", "other"):
                passed_later = True
    return resolved


def _installs(steps: list[Step], attempts: list[Run], unresolved: list[Blocker]) -> list[Blocker]:
    """The failed installs never made good, where what followed shows the environment was wrong."""
    installs = [(s, specs, problems(s, set())) for s in steps if (specs := pip_specs(s))]
    failed: list[tuple[Step, Problem]] = []
    later = _Installed()  # what the installs after the one looked at installed: one pass from the end
    for step, specs, found in reversed(installs):
        errors = [p for p in found if p.key == "pip"]
        if not errors:
            later.add(specs)
        elif not all(later.satisfies(spec) for spec in specs):
            best = next((p for p in reversed(errors) if p.line.startswith("ERROR:")), errors[-1])
            failed.append((step, best))
    failed.reverse()
    if not failed:
        return []
    first = failed[0][0].index
    last_step, last_error = failed[-1]
    ran_after = any(r.step.index > first for r in attempts)
    mismatch = [
        b
        for b in unresolved
        if b.first > first and (b.cause == "environment" or b.line.split(":", 1)[0].endswith(VERSION_MISMATCH))
    ]
    if ran_after and not mismatch:
        return []
    note = (
        "" if not mismatch else f"; what ran after it failed as a wrong version fails (step {mismatch[-1].step.index})"
    )
    return [Blocker("environment", first, last_step, last_error.line, 0.8 if not ran_after else 0.7, note)]


class _Installed:
    """The requirements successful installs asked for: as written, and by project name with the pins they had."""

    def __init__(self) -> None:
        self._written: set[str] = set()
        self._pins: dict[str, set[str | None]] = {}

    def add(self, specs: list[str]) -> None:
        for spec in specs:
            self._written.add(spec)
            got = None if spec.startswith("-r ") else _PIN.match(spec)
            if got is not None:
                self._pins.setdefault(_norm(got.group("name")), set()).add(got.group("pin"))

    def satisfies(self, spec: str) -> bool:
        """Whether ``spec`` was installed: the same project at the same pin (any, if ``spec`` has none)."""
        wanted = None if spec.startswith("-r ") else _PIN.match(spec)
        if wanted is None:
            return spec in self._written
        pins = self._pins.get(_norm(wanted.group("name")), set())
        return bool(pins) if wanted.group("pin") is None else wanted.group("pin") in pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name)

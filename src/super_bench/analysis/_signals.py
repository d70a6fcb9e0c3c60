"""What one step's output says went wrong: the problems the rules weigh, each with its class and line.

A step's output is read line by line for the marks tools leave when they fail: pip's ``ERROR:`` lines,
the last line of a Python traceback (``KeyError: 'x'``), a shell's ``command not found``, wget's
``ERROR 404``, argparse's ``error:``, the harness's cell timeout. Each becomes a ``Problem`` with a
class (the cause it would be if never resolved) and a key: two problems with the same key are the same
error seen again. Problems of kind ``early`` (a syntax error, a bad command line, a shell script broken
by an edit) stop a program before it runs: they say nothing about the errors it met before.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from super_bench.analysis._lines import LINE_CHARS, PROMPT, RAISED, before_note, last_line, read_lines
from super_bench.reading import head, strip_ansi
from super_bench.reading import identity as reading_identity
from super_bench.trajectory import Step

__all__ = ["Problem", "command", "identity", "last_line", "local_names", "pip_specs", "problems", "strip_ansi"]

Kind = Literal["environment", "resource", "compute", "repository_error", "agent", "early", "other"]

# The last line of a Python traceback: an exception's (dotted) name, then its message.
_EXCEPTION = re.compile(
    r"^(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Failure))(?::\s*(?P<msg>.*))?$"
)
# A traceback's frame, as Python prints it or as rich draws it (``│ /path/x.py:12 in run │``).
_FRAME = re.compile(r'^\s*(?:File "(?P<path>[^"]+)", line \d+|[│|]\s*(?P<rich>/\S+\.py):\d+ in \S+)')
_LIBRARY = re.compile(r"(?:site-packages|dist-packages|/lib/python\d|<frozen |<ipython-input|/IPython/)")

_PIP = re.compile(r"(?:^|[\s;&|!])(?:python3? -m )?pip3? install\b(?P<args>[^\n;&|]*)")
# pip's lines that say an install failed; its resolver's notice about already installed packages does not.
_PIP_FAILED = re.compile(
    r"^(?:ERROR: (?!pip's dependency resolver)|error: (?:subprocess-exited-with-error|metadata-generation-failed))"
)
_HARDWARE = re.compile(
    r"CUDA out of memory|OutOfMemoryError|out of memory|no NVIDIA driver|not compiled with CUDA|"
    r"no CUDA(?:-capable)? device|CUDA is not available|CUDA (?:device|GPU)s? (?:is |are )?(?:not available|required)|"
    r"GPU but none is available|no GPU|requires? (?:a )?(?:Ampere|GPU)|only be used on CUDA",
    re.IGNORECASE,
)
_KILLED = re.compile(r"^(?:Killed|.*Killed\s+\S*python.*)$")
_MISSING = re.compile(
    r"No such file or directory|does not exist|not exist|Incorrect path_or_model_id|"
    r"does not appear to have a file|Can't load|is not a valid model identifier|Repository Not Found|"
    r"couldn't find|Could not find|\bhas no [\w ]*files\b|404",
    re.IGNORECASE,
)
_EMPTY_NAME = re.compile(r":\s*''(?:$|[\s.,;])")
_RESOURCE_ERRORS = ("FileNotFoundError", "DatasetNotFoundError", "EntryNotFoundError", "RepositoryNotFoundError")
_DOWNLOAD_404 = re.compile(r"ERROR 404|HTTP Error 404|404 Client Error|404: Not Found")
_NOT_FOUND_CMD = re.compile(r"^(?:.*?: )?(?:line \d+: )?(?P<cmd>\S+): (?:command )?not found$")
_ARGPARSE = re.compile(r"^\S+: error: (?P<msg>.+)$")
# A library's registry that lacks the repository's plug-in (fairseq's --task, --arch): the installed
# library is not the one the repository extends.
_PLUGIN = re.compile(r"argument --(?:task|arch)\S*: invalid choice: '(?P<choice>[^']+)'")
_EARLY = ("SyntaxError", "IndentationError", "TabError")
_CODE_CHARS = 500
# An installed library whose API differs from the one the code was written for: a wrong version.
_API_CHANGED = re.compile(
    r"^TypeError: \S+\(\) got an unexpected keyword argument|^ImportError: cannot import name|"
    r"^AttributeError: module '[\w.]+' has no attribute|ExpectedMoreSplits|"
    r"^AttributeError: .* has no attribute '\w+'\. Did you mean"
)
_KEY_ERROR = re.compile(r"^KeyError: '(?P<key>[^'\s]{1,100})'$")
_MAX_PROBLEMS = 100
_CODE_LINES = 200
_MODULE = re.compile(r"No module named '([\w.]+)'")
_FOLDER = re.compile(r"^[A-Za-z_][\w.-]*$")
# transformers' argument parser refusing a command line: a usage error, as argparse's.
_HF_USAGE = "Some specified arguments are not used by the HfArgumentParser"
# The repository is the first URL after the options (``--depth 1``, ``-b main``: options may take values), else the
# first word that is no option; the URL and the folder end where the shell's own words begin (``&& cd x``, ``; ls``).
_CLONE = re.compile(
    r"git clone\s+(?:(?:[^\s;&|]+\s+)*?(?P<url>(?:[a-z+]+://|git@)[^\s;&|]+)|(?:-\S+\s+)*(?P<path>[^\s;&|]+))"
    r"(?:\s+(?P<dir>[^\s;&|<>-][^\s;&|<>]*))?"
)


@dataclass(frozen=True)
class Problem:
    """One thing that went wrong in a step."""

    kind: Kind
    key: str  # the same key later: the same error again
    line: str  # the line of output that shows it
    step: int


def repository_dirs(steps: list[Step]) -> set[str]:
    """The folder names of the repositories the agent cloned (``git clone URL [DIR]``)."""
    found = set()
    for step in steps:
        for match in _CLONE.finditer(command(step)):
            source = match.group("url") or match.group("path")
            name = match.group("dir") or source.rstrip("/").rsplit("/", 1)[-1]
            name = name.removesuffix(".git").strip("'\"")
            if name:
                found.add(name)
    return found


def local_names(steps: list[Step]) -> frozenset[str]:
    """The repositories cloned and the folders the agent's actions name (``src/run.py``: ``src``)."""
    names = set(repository_dirs(steps))
    for step in steps:
        content = step.action.content
        if step.action.type in ("execute", "edit") and isinstance(content, str):
            for word in content[: _CODE_CHARS * _CODE_LINES].split():
                names.update(part for part in word.split("/")[:-1] if _FOLDER.match(part))
    return frozenset(names)


def command(step: Step) -> str:
    """The code of an execute step, else empty: its first lines, each cut short (``reading.head``)."""
    content = step.action.content
    if step.action.type != "execute" or not isinstance(content, str):
        return ""
    return head(content)


def identity(step: Step) -> frozenset[str]:
    """What an execute step runs (``reading.identity``)."""
    return reading_identity(command(step))


def pip_specs(step: Step) -> list[str]:
    """The requirements a pip install in this step asked for (``name==1.0``, ``-r file``), lower-cased."""
    specs: list[str] = []
    for match in _PIP.finditer(command(step)):
        words = match.group("args").split()
        for i, word in enumerate(words):
            if word in ("-r", "--requirement") and i + 1 < len(words):
                specs.append(f"-r {words[i + 1]}")
            elif _requirement(word) and (i == 0 or words[i - 1] not in ("-r", "--requirement", "-f", "-i")):
                specs.append(word.lower().strip("'\""))
    return specs


def _requirement(word: str) -> bool:
    """A package requirement, not an option, a URL or a path."""
    return not word.startswith("-") and "://" not in word and "/" not in word


def problems(
    step: Step, repos: set[str], local: frozenset[str] = frozenset(), edited: AbstractSet[str] = frozenset()
) -> list[Problem]:
    """The problems one step's output shows, in the order they appear. ``local``: the names of the
    folders the agent works in (see ``local_names``): a module of that name is the repository's own.
    ``edited``: the base names of the files the agent changed before this step: an error raised in one
    of them is the agent's (kind ``agent``), not the repository's."""
    text = step.raw_output
    found: list[Problem] = []
    installing = bool(pip_specs(step))
    frames: list[str] = []
    passed: frozenset[str] | None = None  # the values the step's command passes by name, read once if asked
    for found_line, traced in read_lines(text):
        raw = strip_ansi(found_line[: LINE_CHARS * 2])
        line = raw.strip()[:LINE_CHARS]
        frame = _FRAME.match(raw[:LINE_CHARS])
        if frame:
            frames.append(frame.group("path") or frame.group("rich"))
            continue
        problem = _classify(line, frames, repos, local, installing, step.index, traced)
        if problem is not None:
            if problem.kind in ("repository_error", "early") and _in_edited(frames, line, edited):
                problem = Problem("agent", problem.key, line, step.index)
            elif problem.kind == "repository_error" and (lookup := _KEY_ERROR.match(line)) is not None:
                # A lookup of a name the agent itself passed (``KeyError: 'custom'`` from ``--dataset custom``):
                # the code does not know what it was asked for, so the agent's command is at fault.
                passed = _passed_values(command(step)) if passed is None else passed
                if lookup.group("key") in passed:
                    problem = Problem("agent", f"asked:{problem.key}", line, step.index)
            found.append(problem)
            if problem.kind not in ("early", "other") or _EXCEPTION.match(line) or traced:
                frames = []
    # The last problems are the ones that count (the one that ended the run); a flood of them is cut.
    del found[:-_MAX_PROBLEMS]
    # A failure that printed nothing recognised still failed: the cell raised, or its command's status says so.
    if not found and (step.outcome == "error" or step.exit_code not in (None, 0)):
        status = f"exit status {step.exit_code}" if step.exit_code not in (None, 0) else "the cell raised"
        found.append(Problem("other", status, last_line(text) or status, step.index))
    # The harness stopped the cell: that, not what it printed before, ended the run; an install it stopped failed.
    if step.outcome == "timeout":
        end = last_line(text)
        kind: Kind = "environment" if installing else "compute"
        key = "pip" if installing else "timeout"
        if not installing and PROMPT.search(before_note(text)[-LINE_CHARS:]):
            kind, key = "other", "prompt"  # waiting on a question nobody answers: no compute spent, and not the cause
        found.append(Problem(kind, key, end or "the cell ran out of time", step.index))
    if step.outcome == "kernel_died":
        found.append(Problem("compute", "kernel_died", last_line(text) or "the kernel died", step.index))
    return found


def _passed_values(code: str) -> frozenset[str]:
    """The values a command passes by name: ``--dataset custom``, ``--dataset=custom``, ``dataset=custom``. Read
    once per step, however many lookups its output shows failing."""
    words = code.split()
    values: set[str] = set()
    for i, word in enumerate(words):
        name, equals, value = word.partition("=")
        if equals and name and (name[-1].isalnum() or name[-1] in "_-"):
            values.add(value.strip("'\""))
        elif word.startswith("-") and i + 1 < len(words):
            values.add(words[i + 1].strip("'\""))
    return frozenset(values)


def _in_edited(frames: list[str], line: str, edited: AbstractSet[str]) -> bool:
    """Whether the error came through a file the agent changed (any frame of code outside the libraries: its
    change may have passed the repository's code what breaks it), or broke a shell script it changed
    (``run.sh: line 25: --lr: command not found``)."""
    if not edited:
        return False
    own = [f for f in frames if not _LIBRARY.search(f)]
    if own:
        return any(f.replace("\\", "/").rsplit("/", 1)[-1] in edited for f in own)
    script = line.split(":", 1)[0].rsplit("/", 1)[-1]
    return script in edited


def _classify(
    line: str,
    frames: list[str],
    repos: set[str],
    local: frozenset[str],
    installing: bool,
    index: int,
    traced: bool = False,
) -> Problem | None:
    if not line:
        return None
    if installing and _PIP_FAILED.match(line):
        return Problem("environment", "pip", line, index)
    # Cheap tests first: a line is searched only where it can match (outputs run to millions of lines).
    lower = line.lower()
    if ("error" in lower or "killed" in lower) and _HARDWARE.search(line):
        return Problem("compute", "hardware", line, index)
    if _KILLED.match(line):
        return Problem("compute", "killed", line, index)
    if "404" in line and _DOWNLOAD_404.search(line):
        return Problem("resource", "404", line, index)
    plugin = _PLUGIN.search(line) if "invalid choice" in line else None
    if plugin:
        return Problem("environment", f"plugin:{plugin.group('choice')}", line, index)
    parse = _ARGPARSE.match(line) if ": error: " in line else None
    if parse:
        return Problem("early", "usage", line, index)
    cmd = _NOT_FOUND_CMD.match(line) if line.endswith("not found") else None
    if cmd:
        name = cmd.group("cmd")
        # "--flag: command not found": an edit broke a script's line continuation, nothing ran.
        if name.startswith("-"):
            return Problem("early", "broken-script", line, index)
        return Problem("environment", f"command:{name}", line, index)
    if "can't open file" in line:
        return Problem("early", "no-script", line, index)
    match = _EXCEPTION.match(line) or (RAISED.match(line) if traced else None)
    if match is None:
        return None
    name = match.group("name").rsplit(".", 1)[-1]
    message = match.group("msg") or ""
    key = f"{name}: {message}"[:200]
    if name in _EARLY:
        return Problem("early", "syntax", line, index)
    if _HF_USAGE in message:
        return Problem("early", "usage", line, index)
    if name in ("ModuleNotFoundError", "ImportError"):
        # The repository's own package not found, or a relative import of a script run as a file: how
        # the agent ran it (folder, PYTHONPATH), not a missing dependency.
        module = _MODULE.search(message)
        if "relative import" in message or (module and module.group(1).split(".")[0] in local):
            return Problem("other", key, line, index)
        return Problem("environment", key, line, index)
    missing = name in _RESOURCE_ERRORS or (
        name in ("OSError", "ValueError", "AssertionError") and _MISSING.search(message)
    )
    # An empty name (``Incorrect path_or_model_id: ''``) is no file or model that could not be had: the code
    # built no path at all, a bug of whoever wrote it.
    if missing and not _EMPTY_NAME.search(message):
        return Problem("resource", key, line, index)
    if _API_CHANGED.search(line):
        return Problem("environment", key, line, index)  # the installed library's API is not the one the code uses
    in_repository = any(_repository_frame(path, repos) for path in frames)
    return Problem("repository_error" if in_repository else "other", key, line, index)


def _repository_frame(path: str, repos: set[str]) -> bool:
    if _LIBRARY.search(path):
        return False
    if not repos:
        return True  # no clone seen (a prepared checkout): code outside the libraries is the repository's
    parts = set(path.replace("\\", "/").split("/"))
    return bool(parts & repos)

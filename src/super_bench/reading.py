"""One reading of a trajectory's steps: what each step did, in the grammar of the agent that wrote it.

Provenance, failure analysis, the importer and the viewer ask the same questions of a step (did it run
something, install, look at a file and of which kind, edit one and did the edit take, submit, was it
refused), so they are answered here once. Three grammars:

- ``cells`` (super-bench's own agents): a step is a notebook cell, a SUPER edit, a submission;
- ``react-super``: the same, as the paper's ReAct-SUPER agent wrote them (its failed edits say
  ``Could not find the following lines``, ``Found multiple ... occurrences``);
- ``swe-agent``: plain cells plus SWE-agent's own commands, ``open``, ``goto``, ``scroll_down``,
  ``scroll_up``, ``search_file``, ``search_dir``, ``find_file``, ``create`` and ``edit A:B ... end_of_edit``:
  views and edits of files, never runs of anything (a refused edit says ``Your changes have NOT been
  applied``); a typed ``continue_wait`` is a wait on the running cell.

An imported run says its grammar in the trajectory's metadata (``style``); else the agent's name does.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal

from super_bench import shell
from super_bench.trajectory import Step, Trajectory

Grammar = Literal["cells", "react-super", "swe-agent"]
Kind = Literal["run", "install", "view", "search", "edit", "shell", "wait", "interrupt", "submit", "invalid"]
FileKind = Literal["source", "data"]

SWE_COMMANDS = frozenset(
    {"open", "goto", "scroll_down", "scroll_up", "create", "edit", "search_file", "search_dir", "find_file"}
)
_SWE_VIEWS = frozenset({"open", "goto", "scroll_down", "scroll_up"})
_SWE_SEARCHES = frozenset({"search_file", "search_dir", "find_file"})

# Files whose text is code, configuration or documentation: what a run would do, or what the authors
# wrote, never a result of the run. Everything else (data, predictions, logs, results) is data.
SOURCE_SUFFIXES = frozenset(
    {
        *(".py", ".pyx", ".pxd", ".pyi", ".sh", ".bash", ".zsh", ".ipynb"),
        *(".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh"),
        *(".java", ".scala", ".kt", ".js", ".mjs", ".ts", ".go", ".rs", ".rb", ".pl", ".lua", ".r", ".jl", ".m"),
        *(".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf", ".gin", ".jsonnet", ".properties"),
    }
)
SOURCE_NAMES = frozenset({"makefile", "dockerfile", "setup.cfg", "pyproject.toml", "cmakelists.txt"})
DOC_SUFFIXES = frozenset({".md", ".rst", ".markdown"})
_DOC_NAMES = ("readme", "license", "changelog", "contributing")

# A refused edit, in each grammar's words (SUPER's, SWE-agent's linter and usage, super-bench's own).
FAILED_EDIT = re.compile(
    r"Could not find the following lines|Your changes have NOT been applied|Found multiple|No edit made|"
    r"Usage: edit|Your proposed edit has introduced new syntax error|^ERROR: File .* does not exist|"
    r"edit_linting\.sh|No file open",
    re.MULTILINE,
)
# SWE-agent's answer to a command it could not carry out as written.
_MALFORMED = re.compile(
    r"(?:bash: line \d+: syntax error|No file open|Usage: |Error: <line> must be|grep: Invalid regular expression)"
)
# SWE-agent's window on a file: ``[File: /content/x/train.py (120 lines total)]``.
_WINDOW = re.compile(r"^\[File: (?P<path>[^\n]+?) \(\d+ lines total\)\]", re.MULTILINE)
# A script or module being run (not read: ``cat x.py`` runs nothing): by an interpreter or a launcher, or
# ./x.sh; ``python -c`` runs inline code.
_SCRIPT = re.compile(
    r"(?:\b(?:python[\d.]*|bash|sh|zsh|source|torchrun|deepspeed|launch|accelerate launch)\s+"
    r"(?:--?\w[\w-]*(?:[= ][^\s-]\S*)?\s+)*(?:[\w.~/-]*/)?(?P<name>[\w.-]+\.(?:py|sh))\b)"
    r"|(?:^|[\s;&|!])\./(?:[\w.-]*/)*(?P<local>[\w.-]+\.(?:py|sh))\b"
    r"|\bpython[\d.]*\s+(?:-\w\s+)*-m\s+(?P<module>[\w.]+)"
    r"|\bpython[\d.]*\s+(?:-\w\s+)*(?P<inline>-c)\s"
)
_DOWNLOAD = re.compile(r"\b(?:wget|curl|gdown)\b[^\n;&|]{0,300}?(?P<url>(?:https?|ftp)://\S+)")
_INSTALL = re.compile(r"(?:^|[\s;&|!%])(?:python3? -m )?(?:pip3?|conda|mamba|apt-get|apt) install\b")
_LISTERS = frozenset({"cat", "head", "tail", "less", "more", "nl"})
_WRITEFILE = re.compile(r"^%%writefile\s+(?:-a\s+)?(?P<path>\S+)")
_REDIRECT = re.compile(r"(?<![0-9&])>>?\s*(?P<path>[^\s;&|>]+)")
_CODE_CHARS = 500
_CODE_LINES = 200


@dataclass(frozen=True)
class Deed:
    """What one step did."""

    step: Step
    kind: Kind
    command: str = ""  # the agent's own command (SWE-agent's ``open``), where it used one
    path: str | None = None  # the file it viewed or edited
    file_kind: FileKind | None = None  # of a view: source (code, config, docs) or data (data, logs, results)
    applied: bool | None = None  # of an edit: whether it took
    runs: frozenset[str] = frozenset()  # what a run ran (see ``identity``)
    malformed: bool = False  # an agent command its tool refused as written (a usage error, no file open)

    @property
    def failed_edit(self) -> bool:
        return self.kind == "edit" and self.applied is False

    @property
    def refused(self) -> bool:
        """Whether nothing came of it: an invalid reply, an edit that did not apply, a malformed command."""
        return self.kind == "invalid" or self.failed_edit or self.malformed

    @property
    def summary(self) -> str:
        """What it did, in a few words (the viewer's badge): ``ran train.py``, ``viewed a source file``."""
        if self.kind == "run":
            names = sorted(n for n in self.runs if not n.startswith("download:"))[:3]
            return f"ran {', '.join(names)}" if names else "downloaded"
        if self.kind == "view":
            return f"viewed a {self.file_kind or 'source'} file"
        if self.kind == "edit":
            return "edited" if self.applied else "edit not applied"
        return {"shell": "shell", "install": "installed", "search": "searched files", "wait": "waited"}.get(
            self.kind, self.kind
        )

    @property
    def evidence(self) -> bool:
        """Whether its output can show a result of the agent's work: not a view of source, a search, an
        edit's report, a refused step or a submission."""
        if self.kind == "view":
            return self.file_kind == "data"
        return self.kind in ("run", "install", "shell", "wait", "interrupt")


def file_kind(path: str) -> FileKind:
    """Source (code, configuration, documentation) or data, by the file's name alone: nothing is opened."""
    name = posixpath.basename(path.strip().strip("'\"")).lower()
    suffix = posixpath.splitext(name)[1]
    if name in SOURCE_NAMES or (name.startswith("requirements") and name.endswith(".txt")):
        return "source"
    if suffix in SOURCE_SUFFIXES or suffix in DOC_SUFFIXES or name.startswith(_DOC_NAMES):
        return "source"
    return "data"


def grammar_of(trajectory: Trajectory) -> Grammar:
    style = str(trajectory.metadata.get("style") or trajectory.agent or "")
    if style.startswith("swe"):
        return "swe-agent"
    return "react-super" if style == "react-super" else "cells"


def read_trajectory(trajectory: Trajectory) -> list[Deed]:
    return read_steps(trajectory.steps, grammar_of(trajectory))


def read_steps(steps: list[Step], grammar: Grammar) -> list[Deed]:
    """What each step did, in order (SWE-agent's views of the open file need the steps before them)."""
    deeds: list[Deed] = []
    open_file: str | None = None
    for step in steps:
        deed = read_step(step, grammar, open_file)
        if deed.kind in ("view", "edit") and deed.path:
            open_file = deed.path
        deeds.append(deed)
    return deeds


def read_step(step: Step, grammar: Grammar, open_file: str | None = None) -> Deed:
    """What one step did; ``open_file``: the file SWE-agent had open before it."""
    action = step.action
    if step.outcome == "invalid":
        return Deed(step, "invalid")
    if action.type == "submit":
        return Deed(step, "submit")
    if action.type in ("continue_wait", "interrupt"):
        return Deed(step, "wait" if action.type == "continue_wait" else "interrupt")
    code = action.content if isinstance(action.content, str) else ""
    if action.type == "edit":
        path = code.split("\n", 1)[0].strip() or None
        return Deed(step, "edit", path=path, applied=not FAILED_EDIT.search(step.raw_output[:2000]))
    if grammar == "swe-agent":
        deed = _swe_command(step, code, open_file)
        if deed is not None:
            return deed
    return _cell(step, code)


def _swe_command(step: Step, code: str, open_file: str | None) -> Deed | None:
    words = code.strip().split(None, 1)
    first = words[0] if words else ""
    label = str(step.metadata.get("notebook_action") or "")
    if first == "continue_wait" and len(code.split()) == 1:
        return Deed(step, "wait", command=first)
    if first.startswith(("action:", '{"type"')):
        return Deed(step, "invalid", command="action")  # a reply in no grammar, run as code
    command = label if label in SWE_COMMANDS else first if first in SWE_COMMANDS and not code.startswith("!") else ""
    if not command:
        return None
    output = step.raw_output[:4000]
    window = _WINDOW.search(output)
    shown = window.group("path") if window else None
    malformed = _MALFORMED.match(output.lstrip()) is not None
    if command in _SWE_VIEWS:
        path = shown or (words[1].split()[0] if command == "open" and len(words) > 1 else open_file)
        return Deed(step, "view", command, path, file_kind(path) if path else "source", malformed=malformed)
    if command in _SWE_SEARCHES:
        return Deed(step, "search", command, open_file, malformed=malformed)
    if command == "create":
        path = words[1].split()[0] if len(words) > 1 else shown
        return Deed(step, "edit", command, path, applied=not FAILED_EDIT.search(output))
    # An edit that took is answered with the file's new window; anything else changed nothing (an ``edit``
    # without its line range, one that fell through to IPython's own ``%edit``, one run as Python).
    applied = window is not None and not FAILED_EDIT.search(output)
    return Deed(step, "edit", command, shown or open_file, applied=applied)


def _cell(step: Step, code: str) -> Deed:
    if written := _WRITEFILE.match(code.lstrip()):
        return Deed(step, "edit", "writefile", written.group("path"), applied=step.outcome != "error")
    names = identity(code)
    if _INSTALL.search(code) and not any(n for n in names if not n.startswith("download:")):
        return Deed(step, "install", runs=names)
    if names:
        return Deed(step, "run", runs=names)
    viewed = _viewed_files(code)
    if viewed:
        kind: FileKind = "source" if all(file_kind(p) == "source" for p in viewed) else "data"
        return Deed(step, "view", path=viewed[0], file_kind=kind)
    return Deed(step, "shell")


def head(code: str) -> str:
    """A cell's first lines, each cut short: where a command names what it runs (no cell makes reading slow)."""
    return "\n".join(line[:_CODE_CHARS] for line in code.splitlines()[:_CODE_LINES])


def identity(code: str) -> frozenset[str]:
    """What a cell runs: the scripts (``x.py``, ``x.sh``) and modules (``-m x``) it names, ``<python -c>``; a
    Python cell without them is ``<python>``; a download (wget, curl, gdown) is ``download:<url>``. Empty
    for shell commands that run no script (ls, cat, pip)."""
    text = head(code)
    names = {m.group("name") or m.group("local") or m.group("module") or "<python -c>" for m in _SCRIPT.finditer(text)}
    names |= {f"download:{m.group('url')}" for m in _DOWNLOAD.finditer(text)}
    if names:
        return frozenset(names)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if lines and not all(ln.startswith(("!", "%")) for ln in lines):
        return frozenset({"<python>"})
    return frozenset()


def _viewed_files(code: str) -> list[str]:
    """The files a cell of shell commands prints with cat, head, tail, less, more or nl (and nothing else
    but ``cd``, ``ls`` or ``echo``); empty where it does anything else."""
    files: list[str] = []
    for raw in head(code).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith(("!", "%cd", "%ls")):
            return []
        for words in shell.simple_commands(line.lstrip("!%")):
            program = shell.program(words)
            name = posixpath.basename(program[0]) if program else ""
            if name in ("cd", "ls", "echo", "pwd"):
                continue
            if name not in _LISTERS or any(w.startswith((">", "<")) for w in program):
                return []
            files += [w for w in program[1:] if not w.startswith("-") and not w.isdigit()]
    return files


def edited_files(deeds: list[Deed]) -> set[str]:
    """The base names of the files the agent changed or wrote: applied edits, SWE-agent's ``create``,
    ``%%writefile`` and shell redirections into a file, ``sed -i``."""
    found: set[str] = set()
    for deed in deeds:
        if deed.step.pre_executed:
            continue
        if deed.kind == "edit" and deed.applied and deed.path:
            found.add(posixpath.basename(deed.path.strip()))
        code = deed.step.action.content
        if deed.kind in ("run", "shell", "install") and isinstance(code, str):
            text = head(code)
            for match in _REDIRECT.finditer(text):
                path = match.group("path").strip("'\"")
                if not path.startswith("/dev/") and "." in posixpath.basename(path):
                    found.add(posixpath.basename(path))
            for line in text.splitlines():
                if "sed -i" in line or "sed --in-place" in line:
                    found.update(posixpath.basename(w) for w in line.split()[-1:] if "." in w)
    return found


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

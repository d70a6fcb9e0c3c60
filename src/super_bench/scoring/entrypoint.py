"""Script-executed (Auto set): did the agent really run the task's entrypoint, successfully?

A run counts when all of these hold:

1. An ``execute`` cell *runs* the script: a shell command in the cell (``!cmd``, ``%%bash`` /
   ``%%sh`` cells, ``%run``, ``os.system``/``subprocess`` calls with literal commands) invokes it
   as ``python [opts] path/script.py``, ``python -m package.module``, ``bash|sh script.sh``,
   ``./script.sh``, or through a launcher (``torchrun``, ``accelerate launch``, ``deepspeed``).
   Mentioning the file (``cat``, ``ls``, ``sed``) does not count. Paths match when one's
   components end the other's, so ``cd src && python train.py`` runs ``src/train.py``.
2. The cell finished: it was not interrupted, the kernel did not die, and it was not still
   running when the episode ended (a timeout is not a success). Time spent across
   ``continue_wait`` steps counts.
3. It ran for at least the task's minimum run time (10 s by default).
4. It failed in no visible way: the cell raised no error, the last ``!`` command exited with
   status 0, and the output has no Python traceback and no argparse usage error
   (``script.py: error:``).

The reference harness only checked that the file name appeared in the cell's text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from super_bench import shell
from super_bench.trajectory import Step

_PYTHON = re.compile(r"^(python[\d.]*|pypy[\d.]*)$")
_SHELLS = {"bash", "sh", "zsh", "dash"}
_LAUNCHERS = {"torchrun", "deepspeed", "accelerate", "horovodrun", "mpirun"}
_PY_OPTS_WITH_ARG = {"-W", "-X", "-Q"}


@dataclass(frozen=True)
class EntrypointRun:
    step_index: int
    duration: float
    success: bool
    reason: str


def _components(path: str) -> tuple[str, ...]:
    return tuple(p for p in posixpath.normpath(path).split("/") if p not in ("", "."))


def _suffix_match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


class _Matcher:
    def __init__(self, entrypoint: str) -> None:
        self.path = _components(entrypoint)
        stem = entrypoint[:-3] if entrypoint.endswith(".py") else None
        self.module = _components(stem) if stem else None

    def script(self, arg: str, cwd: str) -> bool:
        return _suffix_match(_components(posixpath.join(cwd, arg)), self.path)

    def module_name(self, name: str) -> bool:
        return self.module is not None and _suffix_match(tuple(name.split(".")), self.module)


def command_runs(command: str, matcher: _Matcher) -> bool:
    """Whether a shell command line runs the entrypoint."""
    cwd = ""
    for words in shell.simple_commands(command):
        if words[0] == "cd" and len(words) > 1:
            cwd = posixpath.join(cwd, words[1])
            continue
        if _invokes(words, matcher, cwd):
            return True
    return False


def _invokes(words: list[str], matcher: _Matcher, cwd: str) -> bool:
    words = shell.program(words)
    if not words:
        return False
    program, args = posixpath.basename(words[0]), words[1:]
    if _PYTHON.match(program):
        return _python_args(args, matcher, cwd)
    if program in _SHELLS:
        for j, arg in enumerate(args):
            if arg == "-c" and j + 1 < len(args):
                return command_runs(args[j + 1], matcher)
            if not arg.startswith("-"):
                return matcher.script(arg, cwd)
        return False
    if program in _LAUNCHERS:
        return any(matcher.script(a, cwd) for a in args if a.endswith(".py")) or any(
            matcher.module_name(args[j + 1]) for j, a in enumerate(args[:-1]) if a == "-m"
        )
    return "/" in words[0] and matcher.script(words[0], cwd)  # ./run.sh, scripts/run.sh


def _python_args(args: list[str], matcher: _Matcher, cwd: str) -> bool:
    j = 0
    while j < len(args):
        arg = args[j]
        if arg == "-m" and j + 1 < len(args):
            module = args[j + 1]
            if module in ("torch.distributed.launch", "torch.distributed.run"):
                return _invokes(["torchrun", *args[j + 2 :]], matcher, cwd)
            return matcher.module_name(module)
        if arg == "-c":
            return False
        if arg in _PY_OPTS_WITH_ARG:
            j += 2
            continue
        if arg.startswith("-"):
            j += 1
            continue
        return matcher.script(arg, cwd)
    return False


def cell_runs_entrypoint(cell: str, entrypoint: str) -> bool:
    matcher = _Matcher(entrypoint)
    return any(command_runs(cmd, matcher) for cmd in shell.shell_commands(cell))


def _usage_error(output: str, entrypoint: str) -> bool:
    return f"{posixpath.basename(entrypoint)}: error:" in output


def entrypoint_runs(entrypoint: str, steps: Sequence[Step], min_runtime: float) -> list[EntrypointRun]:
    """Every attempt to run the entrypoint, with whether it counts and why not."""
    runs: list[EntrypointRun] = []
    for pos, step in enumerate(steps):
        if step.action.type != "execute" or not cell_runs_entrypoint(str(step.action.content or ""), entrypoint):
            continue
        last, outputs = step, [step.raw_output]
        for follow in steps[pos + 1 :]:  # the same cell, waited on or interrupted
            if last.outcome != "timeout" or follow.action.type not in ("continue_wait", "interrupt"):
                break
            last = follow
            outputs.append(follow.raw_output)
        duration = (last.end_time - step.start_time).total_seconds()
        output = "\n".join(outputs)
        runs.append(EntrypointRun(step.index, duration, *_verdict(last, output, duration, entrypoint, min_runtime)))
    return runs


def _verdict(last: Step, output: str, duration: float, entrypoint: str, min_runtime: float) -> tuple[bool, str]:
    if last.outcome == "timeout":
        return False, "still running when the episode moved on (a timeout is not a success)"
    if last.outcome in ("interrupted", "kernel_died", "error", "invalid") or last.action.type == "interrupt":
        return False, f"the cell ended with outcome {last.outcome!r}"
    if "Traceback (most recent call last)" in output:
        return False, "the output has a Python traceback"
    if _usage_error(output, entrypoint):
        return False, "the script rejected its arguments (usage error)"
    if last.exit_code not in (None, 0):
        return False, f"the command exited with status {last.exit_code}"
    if duration < min_runtime:
        return False, f"ran {duration:.1f} s, less than the required {min_runtime:g} s"
    return True, "ran successfully"

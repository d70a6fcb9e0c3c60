"""Reading the shell commands a notebook cell runs: one parser for construction and scoring.

``shell_commands`` finds the command lines of a cell (``!cmd`` lines, ``%%bash`` cells, ``%run``,
``os.system`` and ``subprocess`` calls with literal commands), from the cell as Python (``python_tree``);
``simple_commands`` cuts a command line
into simple commands (``a && b | c`` is three), with the standard library's shell lexer; ``program``
skips what runs a program without being it (``FOO=1 nohup timeout 600 python x.py`` runs ``python``).
"""

from __future__ import annotations

import ast
import re
import shlex
from functools import lru_cache
from typing import Any

# Commands that run the command after them, with the options of theirs that take a separate value
# (``timeout -s INT 600 cmd``); ``timeout`` also takes a duration.
WRAPPERS: dict[str, frozenset[str]] = {
    "time": frozenset(),
    "nohup": frozenset(),
    "exec": frozenset(),
    "command": frozenset(),
    "unbuffer": frozenset(),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "--chdir"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xvfb-run": frozenset({"-n", "--server-num", "-s", "--server-args", "-e", "--error-file", "-f", "--auth-file"}),
    "srun": frozenset({"-n", "--ntasks", "-N", "--nodes", "-c", "-p", "--partition", "-t", "--time", "-J", "-G"}),
}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPERATOR_CHARS = frozenset(";&|()")
# Calls whose first argument is a command line (os.system, subprocess.run, ...).
_COMMAND_CALLS = frozenset(
    {"system", "getoutput", "check_output", "run", "call", "check_call", "Popen", "getstatusoutput"}
)
_SHELL_MAGICS = ("bash", "sh", "shell")


def simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command of a command line, in order (``cd a && python b.py`` -> two).

    Each line is read on its own; a line whose quotes do not balance is split on whitespace.
    Operators (``&&``, ``||``, ``;``, ``|``, ``&``, parentheses, and runs of them such as ``;(``) end
    a simple command; redirections stay among the words.
    """
    commands: list[list[str]] = []
    for line in command.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            tokens = line.split()
        current: list[str] = []
        for token in tokens:
            if token and set(token) <= _OPERATOR_CHARS:
                commands.append(current)
                current = []
            else:
                current.append(token)
        commands.append(current)
    return [c for c in commands if c]


def program(words: list[str]) -> list[str]:
    """The words from the program on, past variable assignments and wrappers with their options."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
        elif word in WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in WRAPPERS[word] else 1
            if word == "timeout":
                i += 1  # the duration
        else:
            break
    return words[i:]


@lru_cache(maxsize=1)
def _transformer() -> Any:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def python_tree(cell: str) -> ast.Module | None:
    """A notebook cell as the Python it runs (``!cmd`` becomes ``get_ipython().system('cmd')``, a ``%magic``
    ``get_ipython().run_line_magic(...)``), parsed; None where it is no Python."""
    try:
        source: str = _transformer().transform_cell(cell)
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def shell_commands(cell: str) -> list[str]:
    """The shell command lines a notebook cell runs, as far as they are literal in its text."""
    stripped = cell.lstrip()
    if stripped.startswith("%%"):
        header, _, body = stripped.partition("\n")
        magic = header[2:].split()
        if magic and (magic[0] in _SHELL_MAGICS or (magic[0] == "script" and magic[1:2] in (["bash"], ["sh"]))):
            return [body]
        return []
    tree = python_tree(cell)
    if tree is None:
        return []
    commands: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, args = node.func.attr, node.args
        literals = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if name in _COMMAND_CALLS:
            if args and isinstance(args[0], ast.List | ast.Tuple):
                parts = [e.value for e in args[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                commands.append(shlex.join(parts))
            elif literals:
                commands.append(literals[0])
        elif name == "run_line_magic" and len(literals) >= 2 and literals[0] in ("run", "sx", "system"):
            commands.append(("python " if literals[0] == "run" else "") + literals[1])
        elif name == "run_cell_magic" and len(literals) >= 3 and literals[0] in _SHELL_MAGICS:
            commands.append(literals[2])
    return commands

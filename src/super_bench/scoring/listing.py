"""Cells that print a file of source code or configuration: their output is that file's text, which shows
what the code would do, not what it did. Provenance takes no evidence of a result from them
(docs/verification.md, "What is no evidence"): a ``0.0 <= thresh`` in a ``cat``'ed ``trainer.py`` shows no
accuracy of 0.0.

A cell is such a listing when each of its statements prints source files and does nothing else:

- shell commands (``!cmd``, ``%%bash``): ``cat``, ``head``, ``tail``, ``less``, ``more``, ``nl``, ``grep``
  (without ``-r``), ``sed -n`` (without ``-i``), alone or piped into one another, after a ``cd``; every
  file they name is source, configuration or documentation (``train.py``, ``config.yaml``, ``README.md``), and at
  least one file is named;
- IPython's ``%pycat file.py``;
- Python that prints or shows a source file's text: ``print(open("train.py").read())``,
  ``Path("train.py").read_text()``, ``with open("train.py") as f: print(f.read())``; imports beside them.

Anything else in the cell (running a script, printing a log or a results file, ``cat results.json``,
``grep -r acc .``) leaves its output evidence, as is every cell that cannot be read this way: the rule
errs on the side of counting output.
"""

from __future__ import annotations

import ast
import posixpath
import re
from functools import lru_cache

from super_bench import shell
from super_bench.reading import file_kind

# The listing programs, with their options that take a separate value (``head -n 20``).
_LISTERS: dict[str, frozenset[str]] = {
    "cat": frozenset(),
    "less": frozenset({"-b", "-h", "-j", "-k", "-o", "-O", "-p", "-P", "-t", "-T", "-x", "-y", "-z"}),
    "more": frozenset({"-n"}),
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes"}),
}
_GREPS = frozenset({"grep", "egrep", "fgrep"})
_GREP_VALUES = frozenset(
    {"-A", "-B", "-C", "-m", "-e", "-f", "-d", "-D", "--include", "--exclude", "--max-count", "--label"}
)
_GREP_RECURSIVE = frozenset({"-r", "-R", "--recursive", "--dereference-recursive", "-d", "--directories"})
_SED_QUIET = frozenset({"-n", "--quiet", "--silent"})
_SED_VALUES = frozenset({"-e", "-f", "-l", "--expression", "--file", "--line-length"})
_READS = frozenset({"read", "readlines", "read_text"})
# A word every listing cell holds: what rules a cell out without reading it as Python.
_LISTER_WORD = re.compile(r"\b(?:cat|head|tail|less|more|nl|e?grep|fgrep|sed|pycat|read|readlines|read_text)\b")


def is_source_file(path: str) -> bool:
    """Whether a path names a file of source code, configuration or documentation (``reading.file_kind``: by
    its name alone, nothing is opened)."""
    return file_kind(path) == "source"


@lru_cache(maxsize=4096)
def prints_source(cell: str) -> bool:
    """Whether a cell only prints files of source code or configuration (the module's rules)."""
    if _LISTER_WORD.search(cell) is None:
        return False  # most cells: no listing program nor file read named, so no parse
    tree = shell.python_tree(cell)
    if tree is None or not tree.body:
        return False
    return all(_statement_lists(node) for node in tree.body)


def _statement_lists(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.Expr):
        return _expression_lists(node.value, set())
    if isinstance(node, ast.With):
        names: set[str] = set()
        for item in node.items:
            if not (_opens_source(item.context_expr) and isinstance(item.optional_vars, ast.Name)):
                return False
            names.add(item.optional_vars.id)
        return all(isinstance(s, ast.Expr) and _expression_lists(s.value, names) for s in node.body)
    return False


def _expression_lists(value: ast.expr, handles: set[str]) -> bool:
    """``print(<read>)`` or a bare ``<read>`` (a cell's last value is shown), or a listing command."""
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Name) and value.func.id == "print":
        return len(value.args) == 1 and _reads_source(value.args[0], handles)
    if _reads_source(value, handles):
        return True
    return _command_lists(value)


def _reads_source(value: ast.expr, handles: set[str]) -> bool:
    """``open(SOURCE).read()``, ``Path(SOURCE).read_text()``, or ``f.read()`` of a source file opened by ``with``."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _READS):
        return False
    target = value.func.value
    if isinstance(target, ast.Name):
        return target.id in handles
    return _opens_source(target)


def _opens_source(value: ast.expr) -> bool:
    """``open("x.py")`` or ``Path("x.py")`` (``pathlib.Path`` too), with a literal source path."""
    if not (isinstance(value, ast.Call) and value.args):
        return False
    func = value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    first = value.args[0]
    return (
        name in ("open", "Path")
        and isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and is_source_file(first.value)
    )


def _command_lists(call: ast.Call) -> bool:
    """``get_ipython().system("cat x.py")`` (``!cat x.py``), ``%pycat x.py`` or a ``%%bash`` cell of listings."""
    func = call.func
    literals = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not isinstance(func, ast.Attribute) or len(literals) != len(call.args):
        return False
    if func.attr in ("system", "getoutput") and len(literals) == 1:
        return _command_line_lists(literals[0])
    if func.attr == "run_line_magic" and len(literals) == 2:
        magic, line = literals
        if magic == "pycat":
            return is_source_file(line.strip())
        return magic in ("system", "sx") and _command_line_lists(line)
    if func.attr == "run_cell_magic" and len(literals) == 3 and literals[0] in ("bash", "sh"):
        return _command_line_lists(literals[2])
    return False


def _command_line_lists(command: str) -> bool:
    """Every simple command a ``cd`` or a listing of source files, and at least one file named."""
    files: list[str] = []
    for words in shell.simple_commands(command):
        if words[0] == "cd":
            continue
        named = _listed_files(shell.program(words))
        if named is None:
            return False
        files.extend(named)
    return bool(files) and all(is_source_file(f) for f in files)


def _listed_files(words: list[str]) -> list[str] | None:
    """The files a listing command prints (none: it reads its input), or None if it is no listing."""
    if not words:
        return None
    program, args = posixpath.basename(words[0]), words[1:]
    if any(a.startswith((">", "<")) or a in ("-", "--") for a in args):
        return None  # redirections and standard input: not simply a file's text
    if program in _LISTERS:
        return _operands(args, _LISTERS[program])
    if program in _GREPS:
        if any(a in _GREP_RECURSIVE or (a[:1] == "-" and a[1:2] != "-" and "r" in a.lower()[1:]) for a in args):
            return None
        operands = _operands(args, _GREP_VALUES)
        has_pattern = any(a in ("-e", "-f") or a.startswith(("--regexp", "--file")) for a in args)
        return operands if has_pattern else operands[1:] if operands else None
    if program == "sed":
        if not any(a in _SED_QUIET for a in args) or any(a.startswith(("-i", "--in-place")) for a in args):
            return None
        operands = _operands(args, _SED_VALUES)
        has_script = any(a in ("-e", "-f", "--expression", "--file") for a in args)
        return operands if has_script else operands[1:] if operands else None
    return None


def _operands(args: list[str], with_value: frozenset[str]) -> list[str]:
    """The words that are not options nor an option's value."""
    operands: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in with_value:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            operands.append(arg)
    return operands

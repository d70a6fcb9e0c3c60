"""The SWE-agent-style file tools, as notebook cells.

Each tool is a plain function here; a command becomes a cell that defines the functions it
needs (their source, taken from this module), calls one, and deletes them again. So the tools
run through the environment's ordinary ``execute`` action, in whatever sandbox the task uses,
relative to the kernel's current directory, and every use is recorded as a cell. The
functions use only the standard library and import inside their bodies, because they run
in the task's Python, not in super-bench's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def swe_show(path: str, first: int, window: int) -> None:
    """Print ``window`` numbered lines of a file from line ``first`` (moved so the window stays inside it)."""
    import os

    if not os.path.isfile(path):
        print(f"Error: {path} is not a file.")
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"Error: cannot read {path}: {e}")
        return
    total = len(lines)
    first = max(1, min(first, total - window + 1))
    last = min(total, first + window - 1)
    print(f"[File: {path} ({total} lines total)]")
    if first > 1:
        print(f"({first - 1} more lines above)")
    for number in range(first, last + 1):
        print(f"{number}:{lines[number - 1]}")
    if last < total:
        print(f"({total - last} more lines below)")


def swe_search_file(term: str, path: str) -> None:
    """Print the lines of a file that contain ``term``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        print(f"Error: cannot read {path}: {e}")
        return
    hits = [(number, line) for number, line in enumerate(lines, 1) if term in line]
    if not hits:
        print(f'No matches found for "{term}" in {path}')
        return
    print(f'Found {len(hits)} matches for "{term}" in {path}:')
    for number, line in hits[:100]:
        print(f"Line {number}:{line}")
    if len(hits) > 100:
        print(f"... and {len(hits) - 100} more; search for something more specific.")


def swe_search_dir(term: str, directory: str) -> None:
    """Print the files under ``directory`` that contain ``term``, with their number of matches."""
    import os

    if not os.path.isdir(directory):
        print(f"Error: {directory} is not a directory.")
        return
    counts = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    data = f.read(5_000_000)
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue  # binary
            n = data.decode("utf-8", "replace").count(term)
            if n:
                counts.append((path, n))
    if not counts:
        print(f'No matches found for "{term}" in {directory}')
        return
    if len(counts) > 100:
        print(f'More than 100 files under {directory} contain "{term}"; search for something more specific.')
        return
    print(f'Found {sum(n for _, n in counts)} matches for "{term}" in {directory}:')
    for path, n in counts:
        print(f"{path} ({n} matches)")


def swe_find_file(pattern: str, directory: str) -> None:
    """Print the files under ``directory`` whose name matches ``pattern`` (shell wildcards allowed)."""
    import fnmatch
    import os

    if not os.path.isdir(directory):
        print(f"Error: {directory} is not a directory.")
        return
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found.extend(os.path.join(root, name) for name in sorted(files) if fnmatch.fnmatch(name, pattern))
    if not found:
        print(f'No files named "{pattern}" under {directory}')
        return
    print(f'Found {len(found)} files named "{pattern}" under {directory}:')
    for path in found[:100]:
        print(path)
    if len(found) > 100:
        print(f"... and {len(found) - 100} more.")


def swe_create(path: str, window: int) -> None:
    """Create an empty file and show it."""
    import os

    if os.path.exists(path):
        print(f"Error: {path} already exists; open it instead.")
        return
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8"):
        pass
    swe_show(path, 1, window)


def swe_edit(path: str, start: int, end: int, text: str, window: int) -> None:
    """Replace lines ``start``..``end`` (1-based, inclusive) with ``text``; a Python file is written only
    if it still compiles (unless it did not compile before either)."""
    try:
        with open(path, encoding="utf-8") as f:
            old = f.read()
    except (OSError, UnicodeDecodeError) as e:
        print(f"Error: cannot read {path}: {e}")
        return
    lines = old.splitlines()
    if start < 1 or end < start - 1 or end > len(lines):
        print(
            f"Error: cannot edit lines {start}:{end}; {path} has {len(lines)} lines. Give START:END with "
            f"1 <= START <= END <= {len(lines)} (or END = START - 1 to insert before line START)."
        )
        return
    new_lines = lines[: start - 1] + (text.split("\n") if text else []) + lines[end:]
    new = "\n".join(new_lines) + ("\n" if new_lines else "")
    if path.endswith(".py"):
        try:
            compile(old, path, "exec")
            compiled_before = True
        except (SyntaxError, ValueError):
            compiled_before = False
        try:
            compile(new, path, "exec")
        except SyntaxError as e:
            if compiled_before:
                where = e.lineno or start
                print(f"Your edit was not applied: it would make {path} invalid Python.")
                print(f"SyntaxError: {e.msg} (line {where})")
                print("The edited file would have read:")
                for number in range(max(1, where - 5), min(len(new_lines), where + 5) + 1):
                    print(f"{number}:{new_lines[number - 1]}")
                print("Fix the edit (mind the indentation) and try again.")
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    added = len(text.split("\n")) if text else 0
    print(f"Edited {path}: lines {start}-{end} replaced by {added} line(s).")
    swe_show(path, max(1, start - window // 2), window)


def tool_cell(label: str, call: Callable[..., None], *args: Any, helpers: tuple[Callable[..., None], ...] = ()) -> str:
    """A notebook cell that defines ``call`` (and ``helpers``), calls it with ``args`` and cleans up."""
    functions = (*helpers, call)
    sources = "\n\n".join(inspect.getsource(f).rstrip() for f in functions)
    names = ", ".join(f.__name__ for f in functions)
    arguments = ", ".join(repr(a) for a in args)
    return (
        f"# {label.splitlines()[0]}\n{sources}\n\n\ntry:\n    {call.__name__}({arguments})\nfinally:\n    del {names}\n"
    )

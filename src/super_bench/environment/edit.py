"""The SUPER edit action: replace lines of a file, located by their exact text.

Format of the action's content::

    path/to/file.py
    <optional lines just before the block, to disambiguate>
    <<<BEFORE_EDIT>>>
    lines to remove
    <<<AFTER_EDIT>>>
    lines to put in their place

The context and removed lines must match exactly one place in the file (lines that are
blank match blank lines whatever their whitespace). Failures say why and show where the
closest lines are, so the agent can correct its edit.
"""

from __future__ import annotations

from dataclasses import dataclass

BEFORE = "<<<BEFORE_EDIT>>>"
AFTER = "<<<AFTER_EDIT>>>"
FORMAT_HELP = (
    "The edit format is:\n"
    "path/to/file\n"
    "[optional lines right before the lines to replace]\n"
    f"{BEFORE}\n"
    "lines to remove\n"
    f"{AFTER}\n"
    "lines to add"
)


class EditFailed(Exception):
    """The edit could not be applied; the message is meant for the agent."""


@dataclass(frozen=True)
class EditRequest:
    path: str
    context: list[str]
    remove: list[str]
    add: list[str]


def parse_edit(content: str) -> EditRequest:
    lines = content.rstrip("\n").split("\n")
    path = lines[0].strip() if lines else ""
    if not path or path in (BEFORE, AFTER):
        raise EditFailed(f"The first line of an edit must be the file's path.\n{FORMAT_HELP}")
    markers = [line.strip() for line in lines[1:]]
    if markers.count(BEFORE) != 1 or markers.count(AFTER) != 1:
        raise EditFailed(f"An edit needs exactly one {BEFORE} line and one {AFTER} line.\n{FORMAT_HELP}")
    before, after = markers.index(BEFORE) + 1, markers.index(AFTER) + 1
    if after < before:
        raise EditFailed(f"{AFTER} must come after {BEFORE}.\n{FORMAT_HELP}")
    request = EditRequest(path, lines[1:before], lines[before + 1 : after], lines[after + 1 :])
    if not request.remove and not request.context:
        raise EditFailed(
            f"Nothing locates the edit: give the lines to remove after {BEFORE}, or, to insert lines, "
            f"the lines they follow before it.\n{FORMAT_HELP}"
        )
    return request


def _same(a: str, b: str, loose: bool) -> bool:
    if loose or not a.strip():
        return a.strip() == b.strip()
    return a == b


def _find(lines: list[str], pattern: list[str], loose: bool = False) -> list[int]:
    n = len(pattern)
    return [i for i in range(len(lines) - n + 1) if all(_same(pattern[j], lines[i + j], loose) for j in range(n))]


def _closest(lines: list[str], pattern: list[str]) -> tuple[int, int]:
    """(start, matching line count) of the window that shares the most lines with the pattern."""
    wanted = [p.strip() for p in pattern]
    best = (0, 0)
    for i in range(max(1, len(lines) - len(pattern) + 1)):
        window = lines[i : i + len(pattern)]
        hits = sum(1 for w, p in zip(window, wanted) if p and w.strip() == p)
        if hits > best[1]:
            best = (i, hits)
    return best


def _numbered(lines: list[str], start: int, stop: int) -> str:
    start, stop = max(0, start), min(len(lines), stop)
    return "\n".join(f"{i + 1:>5} | {lines[i]}" for i in range(start, stop))


def apply_edit(text: str, request: EditRequest) -> tuple[str, str]:
    """The edited text and a message for the agent; raises EditFailed with guidance."""
    newline = "\r\n" if "\r\n" in text else "\n"
    trailing = text.endswith(("\n", "\r\n"))
    lines = text.split(newline)
    if trailing:
        lines.pop()
    pattern = request.context + request.remove
    matches = _find(lines, pattern)
    if not matches:
        shown = "\n".join(pattern)
        message = f"No edit made: these lines were not found in {request.path}:\n```\n{shown}\n```"
        loose = _find(lines, pattern, loose=True)
        if len(loose) == 1:
            message += (
                "\nThey match if leading/trailing whitespace is ignored; the file has (check the indentation):\n"
                f"```\n{_numbered(lines, loose[0], loose[0] + len(pattern))}\n```"
            )
        else:
            start, hits = _closest(lines, pattern)
            if hits:
                message += (
                    f"\nThe closest lines ({hits} of {len(pattern)} lines match) are:\n"
                    f"```\n{_numbered(lines, start, start + len(pattern))}\n```"
                )
        raise EditFailed(message)
    if len(matches) > 1:
        where = ", ".join(str(m + 1) for m in matches[:10])
        raise EditFailed(
            f"No edit made: the lines to replace occur {len(matches)} times in {request.path} (at lines {where}). "
            f"Add a few of the lines just before them, above {BEFORE}, so that exactly one place matches."
        )
    start = matches[0] + len(request.context)
    lines[start : start + len(request.remove)] = request.add
    edited = newline.join(lines) + (newline if trailing else "")
    shown = _numbered(lines, start - 3, start + len(request.add) + 3)
    if request.remove:
        what = f"lines {start + 1}-{start + len(request.remove)} replaced by {len(request.add)} line(s)"
    else:
        what = f"{len(request.add)} line(s) inserted after line {start}"
    message = f"Edit applied to {request.path}: {what}. The edited region now reads:\n```\n{shown}\n```"
    return edited, message

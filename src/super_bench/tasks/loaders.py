"""Loading tasks: the bundled demo suite, local files and directories, and the Hugging Face Hub.

Every row is validated; a bad row is reported with its file, line, task id and field, and the
load fails unless ``skip_invalid`` is set (then the bad rows are skipped with a warning).
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from super_bench._names import TASK_SETS
from super_bench.errors import TaskError, TaskSourceError, TaskValidationError
from super_bench.tasks.model import RawRow, Task

log = logging.getLogger(__name__)

TASK_FILE_SUFFIXES = (".jsonl", ".json", ".parquet")
# Which file names hold which set, in the dataset's current and older layouts.
_SET_FILE_HINTS = {"expert": ("expert",), "masked": ("masked", "scenarios"), "auto": ("auto",)}
_KNOWN_FIELDS = set(Task.model_fields)
_ALIASES = {"set": "task_set"}
# Columns of the dataset that super-bench does not use; kept in metadata without a typo warning.
_DATASET_EXTRAS = {"solutions"}


def load_tasks(
    source: str | Path = "demo",
    task_set: str | None = None,
    *,
    task_ids: Iterable[str] | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
) -> list[Task]:
    """Load, validate and select tasks.

    ``source``: ``"demo"`` (bundled), ``"hf"`` / ``"hf:OWNER/NAME[@REVISION]"`` (Hugging Face Hub), or a
    path to a JSONL / JSON / parquet file or a directory of them. ``task_set``: expert, masked or
    auto; for files, None keeps every row. ``task_ids`` selects tasks by id, in the order given.
    """
    if task_set is not None and task_set not in TASK_SETS:
        raise TaskError(f"unknown task set {task_set!r}; choose one of {', '.join(TASK_SETS)}")
    source_str = str(source)
    if source_str == "demo":
        rows: Iterable[RawRow] = _demo_rows(task_set or "expert")
    elif source_str == "hf" or source_str.startswith("hf:"):
        from super_bench.tasks.hub import hub_rows

        rows = hub_rows(source_str[3:] or None, task_set or "expert")
    else:
        rows = path_rows(Path(source_str).expanduser(), task_set)
    tasks = validate_rows(rows, skip_invalid=skip_invalid)
    if task_set is not None:
        tasks = [t for t in tasks if t.task_set == task_set]
    if task_ids is not None:
        listing = _listing(task_set)
        where = f"{task_set} tasks" if task_set else "tasks"
        tasks = select_ids(
            tasks, list(task_ids), listing=listing, where=where, elsewhere=lambda: _other_sets(source_str, task_set)
        )
    return tasks[:limit] if limit is not None else tasks


def _listing(task_set: str | None) -> str:
    """The command that lists the tasks a lookup searched."""
    return f"`super-bench tasks list --set {task_set}`" if task_set else "`super-bench tasks list`"


def _other_sets(source: str, task_set: str | None) -> dict[str, str]:
    """For the bundled suite, which other set holds each of its task ids (the Hub is not asked again)."""
    if source != "demo" or task_set is None:
        return {}
    return {row_id: other for other in TASK_SETS if other != task_set for row_id in _demo_ids(other)}


def _demo_ids(task_set: str) -> list[str]:
    return [str(row.data.get("task_id")) for row in _demo_rows(task_set)]


def default_set(source: str | Path, task_set: str | None) -> str | None:
    """The set to load when none is given: expert for the demo suite and the Hub, every row for files."""
    return "expert" if task_set is None and _is_named(source) else task_set


def _is_named(source: str | Path) -> bool:
    """The bundled suite or the Hub, as opposed to a path."""
    return str(source) in ("demo", "hf") or str(source).startswith("hf:")


def select_ids(
    tasks: list[Task],
    wanted: list[str],
    *,
    listing: str = "`super-bench tasks list`",
    where: str = "tasks",
    elsewhere: Callable[[], dict[str, str]] | None = None,
) -> list[Task]:
    """The tasks of the wanted ids, in order; an unknown id is one error naming close ids, or the other set
    that holds it (``elsewhere``: id -> set), and the command that lists what there is."""
    by_id = {t.task_id: t for t in tasks}
    missing = [i for i in wanted if i not in by_id]
    if missing:
        hints = []
        other_sets = elsewhere() if elsewhere is not None else {}
        for task_id in missing:
            other = other_sets.get(task_id)
            close = difflib.get_close_matches(task_id, list(by_id), n=3)
            if other:
                hints.append(f"{task_id!r} (a{'n' if other[0] in 'aeiou' else ''} {other} task: add --set {other})")
            else:
                hints.append(f"{task_id!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise TaskError(f"unknown task id(s): {'; '.join(hints)}. {listing} shows the {len(by_id)} {where} there are.")
    return [by_id[i] for i in dict.fromkeys(wanted)]


def find_task(task_id: str, source: str | Path = "demo", task_set: str | None = None) -> Task:
    """One task by id. Without a set, every set of the demo suite or the Hub is searched."""
    if task_set is None and _is_named(source):
        candidates = [task for each in TASK_SETS for task in load_tasks(source, each)]
        listing, where = f"`super-bench tasks list --set {'|'.join(TASK_SETS)}`", "tasks of all sets"
    else:
        candidates = load_tasks(source, task_set)
        listing, where = _listing(task_set), f"{task_set} tasks" if task_set else "tasks"
    (task,) = select_ids(candidates, [task_id], listing=listing, where=where)
    return task


def check_rows(rows: Iterable[RawRow]) -> tuple[list[Task], list[str]]:
    """The valid tasks, and every problem of the others (duplicate ids included)."""
    located, problems = locate_rows(rows)
    return [task for _, task in located], problems


def locate_rows(rows: Iterable[RawRow]) -> tuple[list[tuple[str, Task]], list[str]]:
    """Like ``check_rows``, with each valid task's origin (``file.jsonl:12``) for later checks."""
    located: list[tuple[str, Task]] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for row in rows:
        task, row_problems = parse_row(row)
        if task is not None and task.task_id in seen:
            first = seen[task.task_id]
            row_problems.append(f"{row.origin} (task {task.task_id!r}): duplicate task_id (first at {first})")
            task = None
        if task is None:
            problems.extend(row_problems)
            continue
        seen[task.task_id] = row.origin
        located.append((row.origin, task))
    return located, problems


def validate_rows(rows: Iterable[RawRow], *, skip_invalid: bool = False) -> list[Task]:
    """Validate rows into tasks; fails listing every problem, unless ``skip_invalid``."""
    tasks, problems = check_rows(rows)
    if problems:
        if not skip_invalid:
            raise TaskValidationError(problems)
        for problem in problems:
            log.warning("skipping invalid task row: %s", problem)
    return tasks


def parse_row(row: RawRow) -> tuple[Task | None, list[str]]:
    """One row into a Task, or the list of problems that prevent it."""
    if row.error:
        return None, [f"{row.origin}: {row.error}"]
    data = {_ALIASES.get(k, k): v for k, v in row.data.items()}
    task_id = data.get("task_id")
    where = f"{row.origin} (task {task_id!r})" if task_id else row.origin
    problems = []
    metadata = dict(data.pop("metadata", None) or {})
    for key in [k for k in data if k not in _KNOWN_FIELDS]:
        value = data.pop(key)
        close = difflib.get_close_matches(key, _KNOWN_FIELDS, n=1, cutoff=0.85)
        if close and key not in _DATASET_EXTRAS:
            problems.append(f"{where}: unknown field {key!r}; did you mean {close[0]!r}?")
        else:
            metadata[key] = value  # extra columns are kept, not lost
    data["metadata"] = metadata
    data.setdefault("task_set", row.task_set or _infer_set(data))
    try:
        task = Task.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            field = ".".join(str(p) for p in err["loc"]) or "row"
            message = str(err["msg"]).removeprefix("Value error, ")
            problems.append(f"{where}: field {field!r}: {message}")
        return None, problems
    return (None, problems) if problems else (task, [])


def _infer_set(data: dict[str, Any]) -> str:
    if data.get("pre_execute_cells"):
        return "masked"
    if data.get("entrypoint") and not data.get("answer"):
        return "auto"
    return "expert"


# -- sources ---------------------------------------------------------------------------------------
def _demo_rows(task_set: str) -> Iterator[RawRow]:
    root = resources.files("super_bench") / "demo" / "tasks"
    path = root / f"{task_set}.jsonl"
    if not path.is_file():
        return
    with resources.as_file(path) as real:
        yield from _file_rows(real, task_set)


def path_rows(path: Path, task_set: str | None) -> Iterator[RawRow]:
    if not path.exists():
        raise TaskSourceError(
            f"task source {str(path)!r} does not exist; use 'demo', 'hf', or a path to a .jsonl/.json/.parquet "
            "file or a directory of them"
        )
    if path.is_file():
        yield from _file_rows(path, _set_from_name(path.name))
        return
    files = sorted(p for p in path.rglob("*") if p.suffix in TASK_FILE_SUFFIXES and p.is_file())
    if task_set is not None:
        # In a copy of the dataset (expert.jsonl, masked.jsonl, ...) read only the set asked for.
        named = [p for p in files if _set_from_name(p.name) == task_set]
        files = named or [p for p in files if _set_from_name(p.name) is None]
    if not files:
        raise TaskSourceError(f"no .jsonl, .json or .parquet task files in directory {str(path)!r}")
    for file in files:
        yield from _file_rows(file, _set_from_name(file.name))


def _set_from_name(name: str) -> str | None:
    lowered = name.lower()
    for task_set, hints in _SET_FILE_HINTS.items():
        if any(h in lowered for h in hints):
            return task_set
    return None


def _file_rows(path: Path, task_set: str | None) -> Iterator[RawRow]:
    if path.suffix == ".parquet":
        yield from _parquet_rows(path, task_set)
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskSourceError(f"cannot read task file {path}: {e}") from e
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise TaskSourceError(
                f"{path}:{e.lineno}: not valid JSON ({e.msg}); expected a list of task objects"
            ) from e
        items = data if isinstance(data, list) else [data]
        for i, item in enumerate(items):
            yield _checked(item, f"{path}[{i}]", task_set)
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            yield RawRow({}, f"{path}:{lineno}", task_set, error=f"not valid JSON ({e.msg} at column {e.colno})")
            continue
        yield _checked(item, f"{path}:{lineno}", task_set)


def _checked(item: Any, origin: str, task_set: str | None) -> RawRow:
    if not isinstance(item, dict):
        return RawRow({}, origin, task_set, error=f"expected a JSON object, got {type(item).__name__}")
    return RawRow(item, origin, task_set)


def _parquet_rows(path: Path, task_set: str | None) -> Iterator[RawRow]:
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise TaskSourceError(f"reading {path} needs pyarrow; install it with: pip install 'super-bench[hf]'") from e
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises its own exception types
        raise TaskSourceError(f"cannot read parquet file {path}: {e}") from e
    for i, item in enumerate(table.to_pylist()):
        yield RawRow(item, f"{path} row {i}", task_set)

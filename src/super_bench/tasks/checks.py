"""Checks of valid task rows that need more than the row itself (``super-bench tasks validate``).

- Landmarks must not match an empty output (they would prove nothing) and must not hang the
  scorer (see ``regex_check``).
- Masked ids are ``<expert_id>_<category>[,<category>...]`` with known categories.
- Every task has something to grade: an answer, landmarks or an entrypoint.
- The repository can be cloned, the commit is in it, and the entrypoint is a file of that commit.
  Repositories that need the network are skipped when ``offline`` is set (the demo suite's are
  read from the bundled copies, mirrored ones from their mirrors).
- Each git mirror given could serve agent code's clones (``sandbox.supply.mirror_problems``), as a run checks
  before its first task; here for the default sandbox.
"""

from __future__ import annotations

import difflib
import posixpath
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from super_bench.errors import TaskSourceError
from super_bench.sandbox import SANDBOXES, SandboxConfig, resolve_backend
from super_bench.sandbox.supply import base_url, git_mirrors, mirror_problems
from super_bench.tasks.model import MASKED_CATEGORIES, Task, compile_landmark
from super_bench.tasks.regex_check import DEFAULT_TIMEOUT, slow_patterns
from super_bench.tasks.repos import RepoCache, available_offline, find_files, list_files, resolve_commit

Located = tuple[str, Task]  # (origin, task): "tasks.jsonl:3"


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    def add(self, origin: str, task: Task, field_name: str, message: str) -> None:
        self.problems.append(f"{origin} (task {task.task_id!r}): field {field_name!r}: {message}")


def check_tasks(
    located: Sequence[Located],
    *,
    regex_timeout: float = DEFAULT_TIMEOUT,
    repositories: bool = True,
    offline: bool = False,
    mirrors: SandboxConfig | None = None,
) -> CheckReport:
    """Every problem of these tasks that row validation cannot see; ``mirrors``: git mirrors that serve their
    repositories (checked themselves too)."""
    report = CheckReport()
    for origin, task in located:
        _check_content(origin, task, report)
    _check_landmark_time(located, regex_timeout, report)
    if repositories:
        _check_repositories(located, offline, mirrors or SandboxConfig(), report)
    return report


def _check_content(origin: str, task: Task, report: CheckReport) -> None:
    for i, pattern in enumerate(task.landmarks):
        if compile_landmark(pattern).search("") is not None:
            report.add(
                origin, task, "landmarks", f"landmark {i} ({pattern!r}) matches an empty output: it proves nothing"
            )
    if task.task_set == "masked":
        if not task.categories:
            report.add(origin, task, "task_id", "a masked task id is <expert_id>_<category>")
        for category in task.categories:
            if category not in MASKED_CATEGORIES:
                known = ", ".join(MASKED_CATEGORIES)
                report.add(origin, task, "task_id", f"unknown masked category {category!r} (known: {known})")
    if task.answer is None and not task.landmarks and not task.entrypoint:
        report.add(origin, task, "answer", "nothing to grade: the task has no answer, landmarks or entrypoint")


def _check_landmark_time(located: Sequence[Located], timeout: float, report: CheckReport) -> None:
    patterns = list(dict.fromkeys(p for _, task in located for p in task.landmarks))
    slow = {patterns[i]: why for i, why in slow_patterns(patterns, timeout).items()}
    for origin, task in located:
        for i, pattern in enumerate(task.landmarks):
            if pattern in slow:
                report.add(origin, task, "landmarks", f"landmark {i} ({pattern!r}) {slow[pattern]}")


def _check_repositories(located: Sequence[Located], offline: bool, mirrors: SandboxConfig, report: CheckReport) -> None:
    if mirrors.git_mirrors or mirrors.offline_bundle is not None:
        other_user = SANDBOXES.get(resolve_backend("auto")).agent_is_another_user()
        report.problems += mirror_problems(mirrors, other_user=other_user)
    mirrored = set(git_mirrors(mirrors))
    by_repo: dict[str, list[Located]] = defaultdict(list)
    for origin, task in located:
        if task.github_repo:
            by_repo[task.github_repo].append((origin, task))
        elif task.entrypoint:
            report.notes.append(f"{origin} (task {task.task_id!r}): no github_repo, so the entrypoint was not checked")
    skipped = [url for url in by_repo if offline and not available_offline(url) and base_url(url) not in mirrored]
    if skipped:
        report.notes.append(f"offline: {len(skipped)} repositor{'y' if len(skipped) == 1 else 'ies'} not checked")
    with RepoCache(mirrors) as cache:
        for url, tasks in by_repo.items():
            if url in skipped:
                continue
            try:
                repo = cache.get(url)
            except TaskSourceError as e:
                hint = "" if available_offline(url) else "; --offline skips repositories that need the network"
                for origin, task in tasks:
                    report.add(origin, task, "github_repo", f"{e}{hint}")
                continue
            for origin, task in tasks:
                _check_commit(origin, task, repo, report)


def _check_commit(origin: str, task: Task, repo: Path, report: CheckReport) -> None:
    try:
        commit = resolve_commit(repo, task.git_commit)
    except TaskSourceError:
        report.add(origin, task, "git_commit", f"commit {task.git_commit} is not in {task.github_repo}")
        return
    if not task.entrypoint:
        return
    files = list_files(repo, commit)
    if not find_files(files, task.entrypoint):
        names = {posixpath.basename(f): f for f in files}
        close = [names[n] for n in difflib.get_close_matches(posixpath.basename(task.entrypoint), list(names), n=3)]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        report.add(
            origin,
            task,
            "entrypoint",
            f"{task.entrypoint!r} is not a file of {task.github_repo} at commit {commit[:12]}{hint}",
        )

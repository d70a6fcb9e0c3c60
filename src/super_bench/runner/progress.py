"""The live display of a run on stderr: a progress bar with done / running / failed counts, the tasks
waiting for free disk or memory, the time left, and the tokens and cost of the finished tasks. The CLI
shows it, and so does ``sb.run()``."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from super_bench.runner.admission import ADMISSION, Admission
from super_bench.terminal import SafeConsole, shown
from super_bench.trajectory import Usage

if TYPE_CHECKING:
    from super_bench.runner.results import TaskResult
    from super_bench.tasks.model import Task


class _EtaColumn(ProgressColumn):
    """Time left at the pace of the tasks finished since this run (or resume) began."""

    def render(self, task: ProgressTask) -> Text:
        finished, started = task.fields.get("finished_now", 0), task.fields.get("started_at")
        if not finished or started is None or task.total is None:
            return Text("ETA -:--:--", style="progress.remaining")
        elapsed = time.monotonic() - started
        left = max(0.0, (task.total - task.completed) * elapsed / finished)
        return Text(f"ETA {timedelta(seconds=round(left))}", style="progress.remaining")


class _WaitingColumn(ProgressColumn):
    """The tasks this process holds back until the machine has room for them, as they are at each refresh."""

    def __init__(self, admission: Admission) -> None:
        super().__init__()
        self.admission = admission

    def render(self, task: ProgressTask) -> Text:
        waiting = self.admission.waiting()
        if not waiting:
            return Text("")
        what = " or ".join(sorted(set(waiting)))
        return Text(f"{len(waiting)} waiting for {what}", style="yellow")


class RunProgress:
    """A runner ``Reporter`` that draws the run's progress; ``header``, when given, is printed
    above the bar as the run begins (``sb.run()`` names the run directory there)."""

    def __init__(self, console: Console | None = None, header: str | None = None) -> None:
        self.console = console or SafeConsole(stderr=True)
        self.header = header
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            _WaitingColumn(ADMISSION),
            TimeElapsedColumn(),
            _EtaColumn(),
            TextColumn("{task.fields[usage]}"),
            console=self.console,
        )
        self.bar: TaskID | None = None
        self._within = self._drawn = False  # the bar is drawn live from ``begin`` to the end of ``with``
        self.running = self.failed = self.infra = self.retried = self.finished_now = 0
        self.usage = Usage()

    def __enter__(self) -> RunProgress:
        # Drawn from ``begin`` on: what stops a run before it begins (a sandbox that cannot run, a mirror agent
        # code cannot clone) is said alone, with no empty bar above it.
        self._within = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._within = False
        if self._drawn:
            self._drawn = False
            self.progress.stop()

    def begin(self, total: int, finished: list[TaskResult]) -> None:
        if self._within and not self._drawn:
            self._drawn = True
            self.progress.start()
        if self.header:
            self.console.print(self.header, highlight=False, soft_wrap=True)  # a path stays whole
        for result in finished:
            self._count(result)
        self.bar = self.progress.add_task(
            "tasks", total=total, completed=len(finished), started_at=time.monotonic(), counts="", usage=""
        )
        self._refresh()
        if finished:
            self.console.print(f"resuming: {len(finished)} of {total} tasks already finished")

    def task_started(self, task: Task) -> None:
        self.running += 1
        self._refresh()

    def task_retried(self, result: TaskResult) -> None:
        self.running -= 1
        self.retried += 1
        self.console.print(
            f"[yellow]{shown(result.task_id)}: infrastructure failure, trying again: {shown(result.error)}"
        )
        self._refresh()

    def task_finished(self, result: TaskResult) -> None:
        self.running -= 1
        self.finished_now += 1
        self._count(result)
        self._refresh(advance=1)

    def _count(self, result: TaskResult) -> None:
        self.failed += result.status == "agent_error"
        self.infra += result.status == "infra_error"
        self.usage.add(result.usage)

    def _refresh(self, advance: int = 0) -> None:
        if self.bar is None:
            return
        counts = [f"{self.running} running"]
        if self.failed:
            counts.append(f"[red]{self.failed} failed[/]")
        if self.infra:
            counts.append(f"[red]{self.infra} infra errors[/]")
        if self.retried:
            counts.append(f"{self.retried} retried")
        usage = ""
        if self.usage.model_calls:
            usage = f"{self.usage.prompt_tokens + self.usage.completion_tokens:,} tokens ${self.usage.cost:.2f}"
        self.progress.update(
            self.bar, advance=advance, counts=" ".join(counts), usage=usage, finished_now=self.finished_now
        )

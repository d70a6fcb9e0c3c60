"""``super-bench construct from-notebook|mask|autogen``: building benchmark tasks."""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from super_bench.cli import WholeHelpGroup
from super_bench.cli._options import (
    Default,
    ManyValues,
    ManyValuesCommand,
    as_list,
    git_mirror_option,
    gold_run_options,
    harness_mirrors,
    source_option,
)
from super_bench.terminal import shown, wrapped

if TYPE_CHECKING:
    from super_bench.construct.notebook import NotebookTask
    from super_bench.sandbox import SandboxConfig
    from super_bench.tasks.model import Task


@click.group("construct", cls=WholeHelpGroup)
def construct_group() -> None:
    """Build tasks: Expert tasks from solved notebooks, Masked tasks cut from Expert ones, Auto tasks
    generated from repositories' READMEs."""


@construct_group.command("from-notebook")
@click.argument("notebook", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--repo", required=True, help="The repository's URL (or a local path).")
@click.option("--query", required=True, help="The task's instructions, with the answer format.")
@click.option("--commit", help="The commit to pin. [default: the one the notebook checks out, else the HEAD]")
@click.option("--id", "task_id", help="Task id. [default: the repository's name]")
@click.option(
    "--landmark", "landmarks", multiple=True, metavar="REGEX", help="A landmark (repeatable), instead of suggestions."
)
@click.option("--yes", "-y", is_flag=True, help="Accept the suggested landmarks without asking.")
@click.option(
    "--max-landmarks",
    type=click.IntRange(min=0),
    default=Default("super_bench.construct.notebook:notebook_task.max_landmarks"),
    show_default=True,
    help="Landmarks suggested at most.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="JSONL file to add the task to.")
@git_mirror_option
def from_notebook_command(
    notebook: Path,
    repo: str,
    query: str,
    commit: str | None,
    task_id: str | None,
    landmarks: tuple[str, ...],
    yes: bool,
    max_landmarks: int,
    out: Path | None,
    git_mirrors: dict[str, Path],
) -> None:
    """An Expert task from a solved notebook: its code cells are the solution, the JSON its last cell
    prints is the answer, and milestone lines of its outputs are suggested as landmarks.

    On a terminal each suggestion is shown for you to keep, drop or edit; elsewhere pass --yes to
    accept them, or give your own with --landmark.
    """
    from super_bench.cli._interrupt import stop_twice

    # Nothing is written before the end: an interrupted build has nothing to resume.
    where = f"added to {out}" if out else "printed"

    def advice() -> str:
        return f"interrupted: no task was {where}; run the command again to start over"

    with stop_twice(advice, "the task's construction"):
        _from_notebook(notebook, repo, query, commit, task_id, landmarks, yes, max_landmarks, out, git_mirrors)


def _from_notebook(
    notebook: Path,
    repo: str,
    query: str,
    commit: str | None,
    task_id: str | None,
    landmarks: tuple[str, ...],
    yes: bool,
    max_landmarks: int,
    out: Path | None,
    git_mirrors: dict[str, Path],
) -> None:
    from super_bench.construct.notebook import commit_in, notebook_task, read_cells, task_line
    from super_bench.errors import TaskSourceError
    from super_bench.tasks.repos import RepoCache, resolve_commit

    task_id = task_id or re.sub(r"\.git$", "", repo.rstrip("/").rsplit("/", 1)[-1])
    wanted = commit or commit_in(read_cells(notebook))
    with RepoCache(harness_mirrors(git_mirrors)) as cache:
        try:
            commit = resolve_commit(cache.get(repo), wanted)
        except TaskSourceError as e:
            if wanted is None:
                raise click.UsageError(f"cannot find the commit to pin ({e}); give --commit") from e
            click.secho(
                wrapped(f"warning: could not check commit {wanted} in {repo}: {e}", sys.stderr), fg="yellow", err=True
            )
            commit = wanted
    built = notebook_task(
        notebook,
        task_id=task_id,
        query=query,
        repo=repo,
        commit=commit,
        landmarks=list(landmarks) or None,
        max_landmarks=max_landmarks,
    )
    task = built.task
    if not landmarks:
        task = _review_landmarks(built, yes)
    for warning in built.warnings:
        click.secho(wrapped(f"warning: {warning}", sys.stderr), fg="yellow", err=True)
    line = task_line(task)
    if out is None:
        click.echo(line)
        return
    _append(out, [task], [line])
    click.echo(f"Added task {task.task_id!r} ({len(task.solution)} cells, {len(task.landmarks)} landmarks) to {out}")


def _review_landmarks(built: NotebookTask, yes: bool) -> Task:
    """The task with the landmarks the builder accepted: all suggestions with --yes, else asked one by one."""
    suggestions = built.suggestions
    if yes:
        return built.task
    if not sys.stdin.isatty():
        for s in suggestions:
            click.echo(f"  cell {s.cell}: {s.line}\n    -> {s.regex}", err=True)
        raise click.UsageError(
            f"{len(suggestions)} landmark(s) suggested (above): accept them with --yes, or give yours with --landmark"
        )
    chosen: list[str] = []
    for s in suggestions:
        click.echo(f"\nFrom cell {s.cell} ({s.kind}): {s.line}\n  suggested landmark: {s.regex}")
        answer = click.prompt("  keep it? [y]es, [n]o, [e]dit", type=click.Choice(["y", "n", "e"]), default="y")
        if answer == "y":
            chosen.append(s.regex)
        elif answer == "e":
            chosen.append(_ask_regex("  landmark regex", s.regex, built))
    while extra := _ask_regex("\nAnother landmark regex (empty to finish)", "", built):
        chosen.append(extra)
    from super_bench.tasks.model import Task

    return Task.model_validate({**built.task.model_dump(), "landmarks": chosen})


def _ask_regex(prompt: str, default: str, built: NotebookTask) -> str:
    while True:
        pattern: str = click.prompt(prompt, default=default, show_default=bool(default))
        if not pattern:
            return pattern
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            click.secho(f"  not a valid regex: {e}", fg="red")
            continue
        if not any(compiled.search(cell.output.replace("\n", " ")) for cell in built.cells):
            click.secho("  note: it matches none of the notebook's outputs", fg="yellow")
        return pattern


def _append(out: Path, tasks: list[Task], lines: list[str]) -> None:
    """Add task lines to a JSONL file, refusing ids it already has."""
    from super_bench.tasks.loaders import load_tasks

    existing = {t.task_id for t in load_tasks(out)} if out.exists() and out.stat().st_size else set()
    clash = [t.task_id for t in tasks if t.task_id in existing]
    if clash:
        raise click.UsageError(f"{out} already has task(s) {', '.join(clash)}; choose another --id")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


@construct_group.command("mask", cls=ManyValuesCommand)
@source_option
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Only these Expert tasks.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSONL file to write.")
@click.option("--model", help="Phrase each task's goal with this model (provider/name) instead of the template.")
@click.option("--keep-failed", is_flag=True, help="Also write tasks whose check failed (the reason in metadata).")
@click.option(
    "--runs",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the check runs in this directory (a rerun resumes). [default: a temporary one]",
)
@gold_run_options
def mask_command(
    source: str,
    task_ids: tuple[str, ...],
    out: Path,
    model: str | None,
    keep_failed: bool,
    runs: Path | None,
    sandbox: SandboxConfig,
    cell_timeout: float,
    max_compute: float,
) -> None:
    """Masked tasks from Expert tasks with a solution: one per block of the solution (dependencies,
    data, configuration, cpu, issue, goal), the cells before it (and the later independent ones)
    pre-executed. Every task is checked with the gold agent; those that do not reproduce the gold
    answer and landmarks are reported and left out.
    """
    from rich.markup import escape
    from rich.table import Table

    from super_bench.cli._display import console
    from super_bench.cli._interrupt import finished_in, resume_command, stop_twice
    from super_bench.construct.gold import gold_env
    from super_bench.construct.mask import ModelGoalWriter, failed_task, mask_tasks
    from super_bench.construct.notebook import task_line
    from super_bench.models import create_model
    from super_bench.runner.progress import RunProgress
    from super_bench.tasks.loaders import default_set, load_tasks

    tasks = load_tasks(source, default_set(source, None), task_ids=as_list(task_ids))
    experts = [t for t in tasks if t.task_set == "expert"]
    if not experts:
        raise click.UsageError(f"no Expert tasks in {source}")
    writer = ModelGoalWriter(create_model(model)) if model else None
    env = gold_env(sandbox=sandbox, cell_timeout=cell_timeout, max_compute=max_compute)
    ctx = click.get_current_context()

    def advice() -> str:
        if runs is None:
            again = resume_command(ctx, Path("checks"), "--runs")
            return (
                f"interrupted: nothing was written to {out}, and the check runs were in a temporary folder, "
                f"not kept; nothing to resume. To keep them, so that a rerun resumes, give --runs: {again}"
            )
        done = sum(finished_in(runs / part) for part in ("check", "check-retry"))
        return (
            f"interrupted: nothing was written to {out}; {done} check run(s) finished, kept in {runs}\n"
            f"resume with: {resume_command(ctx)}"
        )

    with (
        stop_twice(advice, "the running check runs"),
        tempfile.TemporaryDirectory(prefix="super-bench-mask-") as tmp,
        RunProgress() as progress,
    ):
        report = mask_tasks(experts, runs or Path(tmp), writer=writer, env=env, reporter=progress)
    table = Table(title=f"Masked tasks from {len(experts)} Expert task(s)", title_justify="left")
    for column in ("task", "pre-executed", "to do", "check"):
        table.add_column(column)
    for m in report.kept + report.failed:
        check = ("reproduces" + (" (retried)" if m.note else "")) if m.verified else "[red]failed"
        table.add_row(shown(m.task.task_id), str(len(m.task.pre_execute_cells)), str(len(m.task.solution)), check)
    console.print(table)
    for m in report.failed:
        console.print(
            f"\n[bold]{m.task.task_id}[/bold] failed its check: " + escape(m.failure()).replace("\n", "\n    ")
        )
    for skipped in report.skipped:
        console.print(f"  skipped {escape(skipped)}")
    written = [m.task for m in report.kept] + ([failed_task(m) for m in report.failed] if keep_failed else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(task_line(t) + "\n" for t in written), encoding="utf-8")
    if writer is not None:
        fallback = f"; the template's text was used for {writer.failures}" if writer.failures else ""
        console.print(f"  model: {writer.usage.model_calls} calls, ${writer.usage.cost:.4f}{fallback}")
    left_out = "" if keep_failed or not report.failed else f"; {len(report.failed)} left out (failed their check)"
    console.print(f"Wrote {len(written)} Masked task(s) to {out}{left_out}")


@construct_group.command("autogen")
@click.argument("repos", nargs=-1, required=True, metavar="REPO...")
@click.option("--model", required=True, help="The model that writes the tasks, as provider/name.")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSONL file to add to.")
@click.option(
    "--per-repo",
    type=click.IntRange(min=1),
    default=Default("super_bench.construct.autogen:autogen.per_repo"),
    show_default=True,
    help="Tasks per repository.",
)
@click.option(
    "--min-runtime",
    type=click.FloatRange(min=0),
    help="Seconds the entrypoint must run to count. [default: 10, the paper's]",
)
@click.option("--offline", is_flag=True, help="Do not check that the READMEs' data links answer.")
@click.option("--no-cache", is_flag=True, help="Do not use or fill the on-disk cache of model replies.")
def autogen_command(
    repos: tuple[str, ...],
    model: str,
    out: Path,
    per_repo: int,
    min_runtime: float | None,
    offline: bool,
    no_cache: bool,
) -> None:
    """Auto tasks from repositories (local paths or git URLs): each is screened (a README, a runnable
    Python entrypoint, no GPU-only code, no external LLM API, no private or unreachable data), then
    the model writes a task from its README. Tasks are validated, deduplicated (also against those
    already in --out) and added to --out.
    """
    from super_bench.cli._display import console
    from super_bench.cli._interrupt import resume_command, stop_twice
    from super_bench.construct.autogen import autogen
    from super_bench.construct.notebook import task_line
    from super_bench.models import ModelOptions, create_model
    from super_bench.tasks.loaders import load_tasks

    chat = create_model(model, ModelOptions(**({"cache": None} if no_cache else {})))
    existing = load_tasks(out) if out.exists() and out.stat().st_size else []
    ctx = click.get_current_context()

    def advice() -> str:
        again = (
            f"the model's replies so far are cached: {resume_command(ctx)} asks them again at no cost"
            if chat.cache is not None
            else "nothing to resume (the cache of model replies is off): run the command again to start over"
        )
        return f"interrupted: no task was added to {out}; {again}"

    with (
        stop_twice(advice, "the screening and the model's requests"),
        console.status("screening repositories and asking the model"),
    ):
        report = autogen(
            list(repos), chat, existing=existing, per_repo=per_repo, check_urls=not offline, min_runtime=min_runtime
        )
    for source, why in report.excluded:
        console.print(f"[yellow]excluded[/yellow] {shown(source)}: {shown(why)}", highlight=False)
    for source, repeated in report.duplicates:
        console.print(
            f"[yellow]duplicate[/yellow] {shown(source)}: a task like {shown(repeated)} exists; dropped",
            highlight=False,
        )
    for task in report.tasks:
        console.print(f"[green]task[/green] {shown(task.task_id)}: runs {shown(task.entrypoint)}", highlight=False)
    _append(out, report.tasks, [task_line(t) for t in report.tasks])
    usage = report.usage
    console.print(
        f"Added {len(report.tasks)} Auto task(s) to {out}; {len(report.excluded)} repositor"
        f"{'y' if len(report.excluded) == 1 else 'ies'} excluded; model: {usage.model_calls} calls, ${usage.cost:.4f}"
    )

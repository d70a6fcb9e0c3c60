"""``super-bench mirror``: an offline bundle of what a task set fetches from the network."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from super_bench.cli._options import ManyValues, as_list, git_mirror_option, harness_mirrors, set_option, source_option


@click.command("mirror")
@source_option
@set_option
@click.option("--task-ids", cls=ManyValues, metavar="ID ...", help="Bundle only these tasks.")
@click.option("--limit", type=click.IntRange(min=1), help="Bundle at most this many tasks.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Directory of the bundle.")
@click.option("--wheels", is_flag=True, help="Also fetch wheels of what the gold solutions pip install.")
@click.option(
    "--task-python",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Interpreter whose pip fetches the wheels, for its Python version and platform. [default: this one]",
)
@git_mirror_option
@click.option("--packages-as-of", metavar="DATE", help="Fetch the wheels as they were on DATE (needs pip 26+).")
@click.option("--pip-index", metavar="URL", help="Fetch the wheels from this index (or proxy) only.")
def mirror_command(
    source: str,
    task_set: str | None,
    task_ids: tuple[str, ...],
    limit: int | None,
    out: Path,
    wheels: bool,
    task_python: Path | None,
    git_mirrors: dict[str, Path],
    packages_as_of: str | None,
    pip_index: str | None,
) -> None:
    """Prepare an air-gapped run: git bundles of the tasks' repositories at their commits (and with
    --wheels, a wheelhouse of what their gold solutions install) in --out. Run from it with
    `super-bench run --offline-bundle DIR`.

    Exit status 1 when something could not be bundled (listed; the rest is bundled).
    """
    from rich.markup import escape

    from super_bench.cli._display import console
    from super_bench.tasks.loaders import default_set, load_tasks
    from super_bench.tasks.offline import make_offline_bundle

    mirrors = harness_mirrors(git_mirrors, packages_as_of=packages_as_of, pip_index=pip_index)
    tasks = load_tasks(source, default_set(source, task_set), task_ids=as_list(task_ids), limit=limit)
    if not tasks:
        raise click.UsageError("no tasks selected")
    with console.status(f"bundling {len(tasks)} task(s)"):
        bundle = make_offline_bundle(
            tasks, out, mirrors=mirrors, wheels=wheels, python=str(task_python) if task_python else None
        )
    n_wheels = len(list(bundle.wheelhouse.glob("*.whl"))) if bundle.wheelhouse else 0
    why = ""
    if wheels and n_wheels == 0:
        why = (
            " (what the gold solutions pip install is built from their repositories, listed below)"
            if bundle.skipped
            else " (the gold solutions pip install nothing from a package index)"
        )
    console.print(
        f"Bundled {len(bundle.repositories)} repositor{'y' if len(bundle.repositories) == 1 else 'ies'}"
        + (f" and {n_wheels} wheel(s){why}" if wheels else "")
        + f" for {len(tasks)} task(s) in {out}",
        highlight=False,
    )
    for skipped in bundle.skipped:
        # Each says why: it is built at install time from the repository, which is bundled, so no wheel is needed.
        console.print(f"[yellow]not fetched ahead[/yellow] {escape(skipped)}", highlight=False)
    for problem in bundle.problems:
        console.print(f"[red]not bundled[/red] {escape(problem)}", highlight=False)
    console.print(f"Run from it with: super-bench run --offline-bundle {out} ...", highlight=False)
    if bundle.problems:
        sys.exit(1)

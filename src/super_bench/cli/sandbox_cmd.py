"""``super-bench sandbox build|check``."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from super_bench.cli._display import console
from super_bench.cli._options import Default
from super_bench.errors import SuperBenchError


@click.group("sandbox")
def sandbox_group() -> None:
    """Prepare the environment tasks run in, and see which sandboxes work here."""


@sandbox_group.command("build")
@click.option(
    "--backend",
    type=click.Choice(["auto", "local", "bwrap", "docker"]),
    default=Default("super_bench.sandbox.base:SandboxConfig.backend"),
    show_default=True,
    help="docker: build the task image; the others: build the base environment task environments are layered over.",
)
@click.option(
    "--python",
    "python",
    metavar="PYTHON",
    help="Interpreter the base environment is made from: a path or a command on PATH (python3.10). "
    "[default: a Python 3.10, as SUPER's, where one is installed, else the closest version]",
)
@click.option(
    "--requirements",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Packages to install. [default: those SUPER's tasks were solved with, shipped with super-bench]",
)
@click.option(
    "--pip-arg",
    "pip_args",
    multiple=True,
    metavar="ARG",
    help="An extra argument for pip (repeatable), e.g. --pip-arg=--no-index --pip-arg=--find-links=DIR.",
)
@click.option("--engine", type=click.Choice(["docker", "podman"]), help="Container engine. [default: the one running]")
@click.option("--tag", help="Image tag. [default: super-bench-task:<version>]")
def build_command(
    backend: str,
    python: str | None,
    requirements: Path | None,
    pip_args: tuple[str, ...],
    engine: str | None,
    tag: str | None,
) -> None:
    """Build SUPER's task environment, once: the Docker image, or the base virtual environment.

    Every later run uses it: the docker sandbox runs its containers from the image; local and
    bwrap sandboxes layer each task's environment over the base (unless --task-python is given).
    What agents install goes into their task's layer, never into the base. Entries of the package
    list that cannot be had here are reported and left out; runs record how the environment
    differs from the paper's.
    """
    from super_bench.sandbox.pyenv.super_base import COLAB_REQUIREMENTS, build_base_env

    requirements = requirements or COLAB_REQUIREMENTS
    if backend == "docker":
        if python is not None or pip_args:
            raise click.UsageError("--python and --pip-arg apply to the base environment, not to the docker image")
        from super_bench.sandbox.backends.docker import DEFAULT_IMAGE, build_image

        image = build_image(engine, tag or DEFAULT_IMAGE, requirements)
        console.print(f"Built the image [bold]{image}[/]; run tasks in it with --sandbox docker.")
        return
    if engine is not None or tag is not None:
        raise click.UsageError("--engine and --tag apply to --backend docker")
    record = build_base_env(python, requirements, pip_args, echo=console.print)
    console.print(f"Built SUPER's task environment (Python {record.version}); task environments now use it.")
    for entry, why in record.skipped.items():
        console.print(f"[yellow]Left out[/] {entry}: {why}")
    for note in record.notes:
        console.print(f"[yellow]Note:[/] {note}")


@sandbox_group.command("check")
@click.option(
    "--conformance",
    "conformance",
    metavar="BACKEND",
    help="Run the checks every backend must pass on BACKEND (a registered name, plug-ins included).",
)
def check_command(conformance: str | None) -> None:
    """Say which sandbox backends work on this machine, and what `auto` picks."""
    from super_bench.sandbox import SANDBOXES, SandboxConfig, resolve_backend

    if conformance is not None:
        from super_bench.sandbox.conformance import check_conformance

        report = check_conformance(SANDBOXES.get(conformance))
        for result in report.checks:
            mark = "[green]pass[/]" if result.passed else "[red]FAIL[/]"
            console.print(f"{mark} {result.name}" + (f": {result.detail}" if result.detail else ""), markup=True)
        if not report.passed:
            raise SystemExit(1)
        console.print(f"The {report.backend} sandbox passes every conformance check.")
        return

    table = Table(title="Sandboxes", title_justify="left")
    for column in ("backend", "works here", "isolation / what to do"):
        table.add_column(column)
    config = SandboxConfig()
    for name, summary in SANDBOXES.summaries().items():
        try:
            SANDBOXES.get(name).check(config)
            table.add_row(name, "[green]yes[/]", summary)
        except SuperBenchError as e:
            table.add_row(name, "[red]no[/]", str(e))
    console.print(table)
    console.print(f"--sandbox auto uses: [bold]{resolve_backend('auto')}[/]")
    from super_bench.sandbox.limits.memory import describe, memory_mechanism

    console.print(f"--memory-limit is enforced by: {describe(memory_mechanism())}")
    from super_bench.sandbox.limits import disk

    console.print(f"--disk-limit is enforced by: {disk.describe(disk.disk_mechanism())}")
    from super_bench.sandbox import describe_backend

    console.print(f"Task environment: {describe_backend(config).environment}")

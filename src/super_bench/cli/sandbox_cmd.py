"""``super-bench sandbox build|check``."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
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
@click.option(
    "--base-image",
    metavar="IMAGE",
    help="docker: the Debian-like image to build over (it needs python3, or apt-get to install it). "
    "[default: debian:bookworm-slim]",
)
@click.option(
    "--kernel-only",
    is_flag=True,
    help="docker: build only the small kernel layer (super-bench-kernel:<version>), not SUPER's packages (GBs); "
    "runs use it where SUPER's image is not built, and record the difference.",
)
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="docker: a CA bundle mounted read-only into the build's downloads. [default: the one pip here uses "
    "(PIP_CERT, or pip's cert setting), where one is set]",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before downloading (asked only at a terminal).")
def build_command(
    backend: str,
    python: str | None,
    requirements: Path | None,
    pip_args: tuple[str, ...],
    engine: str | None,
    tag: str | None,
    base_image: str | None,
    kernel_only: bool,
    ca_bundle: Path | None,
    yes: bool,
) -> None:
    """Build SUPER's task environment, once: the Docker image, or the base virtual environment.

    Every later run uses it: the docker sandbox runs its containers from the image; local and
    bwrap sandboxes layer each task's environment over the base (unless --task-python is given).
    What agents install goes into their task's layer, never into the base. Entries of the package
    list that cannot be had here are reported and left out; runs record how the environment
    differs from the paper's.
    """
    from super_bench.sandbox.pyenv.super_base import BUILD_COST, COLAB_REQUIREMENTS, build_base_env

    if not kernel_only:  # the kernel layer alone is small
        cost = BUILD_COST if requirements is None else f"the packages of {requirements} to download"
        console.print(f"Building SUPER's task environment: {cost}. The bundled demo tasks do not need it.")
        if not yes and sys.stdin.isatty():
            click.confirm("Go on?", abort=True)
    requirements = requirements or COLAB_REQUIREMENTS
    if backend == "docker":
        if python is not None or pip_args:
            raise click.UsageError("--python and --pip-arg apply to the base environment, not to the docker image")
        from super_bench.sandbox.backends.container_image import DEFAULT_IMAGE, build_images, host_ca_bundle

        info = build_images(
            base_image or "debian:bookworm-slim",
            engine_name=engine,
            tag=tag or DEFAULT_IMAGE,
            requirements=requirements,
            kernel_only=kernel_only,
            ca_bundle=ca_bundle or host_ca_bundle(),
            echo=console.print,
        )
        console.print(f"Built {escape(info.summary)}; run tasks in it with --sandbox docker.")
        for difference in info.differences:
            console.print(f"[yellow]Differs from the paper's environment:[/] {escape(difference)}")
        return
    if engine or tag or base_image or kernel_only or ca_bundle:
        raise click.UsageError("--engine, --tag, --base-image, --kernel-only and --ca-bundle apply to --backend docker")
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
    from super_bench.sandbox.backends.bwrap import privilege_summary

    console.print(f"bwrap privileges: {privilege_summary()}")
    from super_bench.sandbox.backends.docker import MEMORY_MECHANISM, DockerSandbox, describe_engine

    console.print(f"--sandbox docker uses: {escape(describe_engine(config))}")
    from super_bench.sandbox.limits.memory import describe, memory_mechanism

    console.print(f"--memory-limit is enforced by: {describe(memory_mechanism())}; in docker: {MEMORY_MECHANISM}")
    from super_bench.sandbox.limits import disk

    in_docker = DockerSandbox.describe(config.model_copy(update={"disk_limit": 1 << 30})).disk_enforcement
    console.print(f"--disk-limit is enforced by: {disk.describe(disk.disk_mechanism())}; in docker: {in_docker}")
    from super_bench.sandbox import describe_backend

    console.print(f"Task environment: {describe_backend(config).environment}")

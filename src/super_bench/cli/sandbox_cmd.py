"""``super-bench sandbox build|check``."""

from __future__ import annotations

import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from super_bench.cli import WholeHelpGroup
from super_bench.cli._display import console
from super_bench.cli._options import Default
from super_bench.errors import SuperBenchError


@click.group("sandbox", cls=WholeHelpGroup)
def sandbox_group() -> None:
    """Prepare the environment tasks run in, and see which sandboxes work here."""


# The options of ``sandbox build`` a backend takes or not (``Sandbox.build_options``), by their flags.
_BUILD_FLAGS = {
    "python": "--python",
    "pip_args": "--pip-arg",
    "engine": "--engine",
    "tag": "--tag",
    "base_image": "--base-image",
    "kernel_only": "--kernel-only",
    "ca_bundle": "--ca-bundle",
    "packages_as_of": "--packages-as-of",
    "torch": "--torch",
}


@sandbox_group.command("build")
@click.option(
    "--sandbox",
    "--backend",  # its earlier name, still accepted
    "backend",
    metavar="BACKEND",
    default=Default("super_bench.sandbox:SandboxConfig.backend"),
    show_default=True,
    help="Whose environment to build: auto, local, bwrap, docker or a plug-in's name. docker: the task image; "
    "local and bwrap: the base environment task environments are layered over.",
)
@click.option(
    "--python",
    "python",
    metavar="PYTHON",
    help="Interpreter the base environment is made from: a path or a command on PATH (python3.10); docker: the "
    "one copied into the image where its base has no Python 3.10, so that both backends run one interpreter. "
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
@click.option(
    "--packages-as-of",
    metavar="DATE",
    help="Install the packages as they were on DATE (2024-03-01: uploaded by the end of that day, UTC; or a "
    "date and time), as `run --packages-as-of` does for what tasks install; recorded in every run's "
    "task_environment. [default: today's]",
)
@click.option(
    "--torch",
    type=click.Choice(["pypi", "cpu"]),
    help="Where torch comes from: cpu, the PyTorch CPU index (download.pytorch.org/whl/cpu), for torch packages "
    "only: the paper's runs had torch 2.2.1+cpu; where that index does not answer (asked once), PyPI's, and the "
    "build records it; or pypi, PyPI's build with CUDA libraries (GBs). [default: cpu]",
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
    packages_as_of: str | None,
    torch: str | None,
    yes: bool,
) -> None:
    """Build SUPER's task environment, once: the Docker image, or the base virtual environment.

    Every later run uses it: the docker sandbox runs its containers from the image; local and
    bwrap sandboxes layer each task's environment over the base (unless --task-python is given).
    What agents install goes into their task's layer, never into the base. Entries of the package
    list that cannot be had here are reported and left out; runs record how the environment
    differs from the paper's.
    """
    from super_bench.sandbox import BUILD_COST, DEFAULT_REQUIREMENTS, SANDBOXES, BuildRequest, resolve_backend

    name = resolve_backend(backend)
    cls = SANDBOXES.get(name)
    options: dict[str, Any] = {"python": python, "pip_args": pip_args, "engine": engine, "tag": tag}
    options |= {"base_image": base_image, "kernel_only": kernel_only, "ca_bundle": ca_bundle}
    options |= {"packages_as_of": _as_of(packages_as_of), "torch": torch}
    given = {field: value for field, value in options.items() if value}
    if not_taken := [_BUILD_FLAGS[field] for field in given if field not in cls.build_options]:
        raise click.UsageError(f"the {name} sandbox's build takes no {', '.join(not_taken)}")
    if not kernel_only:  # the kernel layer alone is small
        cost = BUILD_COST if requirements is None else f"the packages of {requirements} to download"
        console.print(f"Building SUPER's task environment: {cost}. The bundled demo tasks do not need it.")
        if not yes and sys.stdin.isatty():
            click.confirm("Go on?", abort=True)
    request = BuildRequest(requirements=requirements or DEFAULT_REQUIREMENTS, **given)
    report = cls.build(request, console.print)
    console.print(f"Built {escape(report.built)}")
    for heading, text in report.notes:
        console.print(f"[yellow]{escape(heading)}[/] {escape(text)}")


@sandbox_group.command("check")
@click.option(
    "--conformance",
    "conformance",
    metavar="BACKEND",
    help="Run the checks every backend must pass on BACKEND (a registered name, plug-ins included).",
)
@click.option(
    "--image",
    metavar="IMAGE",
    help="docker: the image to check and describe (one built with --tag). [default: the one `super-bench "
    "sandbox build` makes]",
)
def check_command(conformance: str | None, image: str | None) -> None:
    """Say which sandbox backends work on this machine, and what `auto` picks."""
    from super_bench.sandbox import SANDBOXES, SandboxConfig, describe_backend, resolve_backend

    if conformance is not None:
        from super_bench.conformance import run_conformance

        report = run_conformance(SANDBOXES.get(conformance))
        for result in report.checks:
            mark = "[green]pass[/]" if result.passed else "[red]FAIL[/]"
            detail = f": {escape(result.detail)}" if result.detail else ""
            console.print(f"{mark} {escape(result.name)}{detail}", markup=True)
        if not report.passed:
            raise SystemExit(1)
        console.print(f"The {report.backend} sandbox passes all {len(report.checks)} conformance checks.")
        return

    table = Table(title="Sandboxes", title_justify="left")
    for column in ("backend", "works here", "isolation / what to do"):
        table.add_column(column)
    config = SandboxConfig(image=image)
    lines: dict[str, None] = {}  # each line once, in the order the backends give them
    working: list[str] = []
    for name, summary in SANDBOXES.summaries().items():
        try:
            cls = SANDBOXES.get(name)
        except SuperBenchError as e:  # a plug-in whose extra is not installed
            table.add_row(name, "[red]no[/]", str(e))
            continue
        lines |= dict.fromkeys(cls.check_lines(config))
        try:
            cls.check(config)
            table.add_row(name, "[green]yes[/]", summary)
            working.append(name)
        except SuperBenchError as e:
            table.add_row(name, "[red]no[/]", str(e))
    console.print(table)
    console.print(f"--sandbox auto uses: [bold]{resolve_backend('auto')}[/]")
    for line in lines:
        console.print(escape(line))
    console.print(f"Task environment: {escape(describe_backend(config).environment)}")
    _show_differences(console, working, config)


def _show_differences(console: Any, backends: list[str], config: Any) -> None:
    """Each working backend's task environment's differences from the paper's (``task_environment``'s
    ``differences``, as runs record them); a list several backends share is printed once."""
    from super_bench.sandbox import describe_backend

    shown: dict[tuple[str, ...], list[str]] = {}
    for name in backends:
        environment = describe_backend(config.model_copy(update={"backend": name})).task_environment
        differences = tuple(str(d) for d in environment.get("differences") or ())
        if differences:
            shown.setdefault(differences, []).append(name)
    for differences, names in shown.items():
        console.print(f"Differs from the paper's environment ({', '.join(names)}):")
        for line in differences:
            console.print(f"  - {escape(line)}")


def _as_of(value: str | None) -> date | datetime | None:
    """``--packages-as-of``, read as ``run`` reads it; a bad date is a usage error naming the option."""
    if value is None:
        return None
    from super_bench.sandbox.supply import read_packages_as_of

    try:
        return read_packages_as_of(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--packages-as-of") from None

"""Click helpers shared by the commands."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from super_bench._names import DISK_ENFORCEMENTS, MEMORY_ENFORCEMENTS, PACKAGE_CACHE_MODES, SCORE_MODES, TASK_SETS

if TYPE_CHECKING:
    from super_bench.sandbox import SandboxConfig

F = TypeVar("F", bound=Callable[..., Any])


class ManyValues(click.Option):
    """An option that takes every following word up to the next option: ``--task-ids a b c``.

    Repeating the option works too. (Values are never split on commas: Masked task ids
    such as ``abc_configuration,data`` contain them.) Its command must be a ``ManyValuesCommand``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("multiple", True)
        super().__init__(*args, **kwargs)


class ManyValuesCommand(click.Command):
    """A command with ``ManyValues`` options: before click parses the arguments, ``--task-ids a b`` is
    spelt out as ``--task-ids a --task-ids b``, which click reads as a repeated option."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._spread(args))

    def _spread(self, args: list[str]) -> list[str]:
        many: set[str] = set()
        valued: set[str] = set()  # options that take the next word as their value, whatever it looks like
        for param in self.params:
            if isinstance(param, ManyValues):
                many.update(param.opts)
            elif isinstance(param, click.Option) and not (param.is_flag or param.count):
                valued.update(param.opts)
        spread: list[str] = []
        words = iter(args)
        filling = None  # the ManyValues option whose further words are being read
        for word in words:
            if word == "--":  # what follows is no option
                spread += [word, *words]
                break
            if filling is not None and not word.startswith("-"):
                spread += [filling, word]
                continue
            filling = None
            spread.append(word)
            name, has_value, _ = word.partition("=")
            if name in many:
                filling = name
            if name in many | valued and not has_value:
                spread += [value for value in (next(words, None),) if value is not None]
        return spread


def default_of(target: str) -> Any:
    """The default of a config model's field, or of a function's parameter: ``"module:Owner.name"``."""
    module, _, path = target.partition(":")
    owner_name, _, name = path.rpartition(".")
    owner = getattr(importlib.import_module(module), owner_name)
    fields = getattr(owner, "model_fields", None)
    if isinstance(owner, type) and fields is not None:
        return fields[name].get_default(call_default_factory=True)
    return inspect.signature(owner).parameters[name].default


class Default:
    """An option's default taken from where it is defined (see ``default_of``), so that it is written once.

    Click calls it when the option is not given, and shows its text in ``--help``; only then is the
    module that defines it imported, so that loading a command stays cheap (``super-bench --help``
    loads them all). An option with such a default needs an explicit ``type``: click would otherwise
    guess one from the default.
    """

    def __init__(self, target: str, to_option: Callable[[Any], Any] | None = None) -> None:
        self.target = target
        self.to_option = to_option  # the option's spelling of the value (True -> "on")

    def __call__(self) -> Any:
        value = default_of(self.target)
        return value if self.to_option is None else self.to_option(value)

    def __str__(self) -> str:
        value = self()
        if isinstance(value, tuple | list):
            return ", ".join(map(str, value))
        if isinstance(value, int) and not isinstance(value, bool) and value >= 100_000:
            return f"{value:,}"
        return str(value)


ENV = "super_bench.environment:EnvConfig."
SANDBOX = "super_bench.sandbox:SandboxConfig."
RUN = "super_bench.runner.config:RunConfig."
TASKS = "super_bench.runner.config:TaskChoice."


def as_list(values: tuple[str, ...] | None) -> list[str] | None:
    """The option's values; None when none were given."""
    return list(values) if values else None


def key_values(values: tuple[str, ...], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a dict; values are JSON where they parse (``0.5``, ``true``), else text."""
    settings: dict[str, Any] = {}
    for item in values:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=option)
        try:
            settings[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            settings[key.strip()] = text
    return settings


mode_option = click.option(
    "--mode",
    type=click.Choice(SCORE_MODES),
    default=Default(RUN + "mode"),
    show_default=True,
    help="Output-match scoring: corrected, or exactly as the reference harness (the paper's numbers).",
)


source_option = click.option(
    "--source",
    type=str,
    default=Default(TASKS + "source"),
    show_default=True,
    help="Tasks: demo (bundled, offline), hf (the allenai/super dataset), hf:OWNER/NAME[@REV], "
    "or a .jsonl/.json/.parquet file or directory.",
)

set_option = click.option(
    "--set",
    "task_set",
    type=click.Choice(TASK_SETS),
    default=None,
    help="Task set. [default: expert for demo and hf; every row for files]",
)


def budget_options(function: F) -> F:
    """--cell-timeout, --max-steps, --max-compute and --output-limit: the environment's limits per task."""
    options = (
        click.option(
            "--cell-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=Default(ENV + "cell_timeout"),
            show_default=True,
            help="Soft timeout of a cell, in seconds.",
        ),
        click.option(
            "--max-steps",
            type=click.IntRange(min=1),
            default=Default(ENV + "max_steps"),
            show_default=True,
            help="Agent steps per task.",
        ),
        click.option(
            "--max-compute",
            type=click.FloatRange(min=0, min_open=True),
            default=Default(ENV + "max_compute"),
            show_default=True,
            help="Seconds of execution per task.",
        ),
        click.option(
            "--output-limit",
            metavar="SIZE",
            type=str,
            default=Default(ENV + "episode_output_limit"),
            show_default=True,
            callback=_output_limit,
            help="Raw output (images included) kept per task, in characters; 256m means 256 Mi. Beyond it, "
            "each step keeps a head and a tail.",
        ),
    )
    for option in reversed(options):
        function = option(function)
    return function


def _size(ctx: click.Context, param: click.Parameter, value: str | int | None) -> int | None:
    """A size such as ``8g``, ``512m`` or a number of bytes, in bytes."""
    from super_bench._sizes import parse_size

    try:
        return None if value is None else parse_size(str(value))
    except ValueError as e:
        raise click.BadParameter(str(e)) from e


def _output_limit(ctx: click.Context, param: click.Parameter, value: str | int | None) -> int | None:
    size = _size(ctx, param, value)
    if size is not None and size < 1000:
        raise click.BadParameter(f"{value} is below the least output a task may keep, 1000 characters")
    return size


def _mirrors(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Path]:
    """``--git-mirror URL=PATH`` values as a dict (the URL may itself hold '=': the last one splits)."""
    mirrors: dict[str, Path] = {}
    for item in values:
        url, sep, path = item.rpartition("=")
        if not sep or not url.strip() or not path.strip():
            raise click.BadParameter(f"expected URL=PATH, got {item!r}")
        mirrors[url.strip()] = Path(path.strip())
    return mirrors


git_mirror_option = click.option(
    "--git-mirror",
    "git_mirrors",
    multiple=True,
    metavar="URL=PATH",
    callback=_mirrors,
    help="Serve this repository URL (with or without .git) from PATH: a bare repository, a clone or a git "
    "bundle; or a URL prefix from a directory of them (repeatable).",
)


def harness_mirrors(git_mirrors: dict[str, Path], **settings: Any) -> SandboxConfig:
    """The mirror settings of a command that fetches without a sandbox (``mirror``, ``construct from-notebook``)."""
    from pydantic import ValidationError

    from super_bench.sandbox import SandboxConfig

    try:
        return SandboxConfig(git_mirrors=git_mirrors, **settings)
    except ValidationError as e:
        error = e.errors()[0]
        option = "--" + str(error["loc"][0]).replace("_", "-").replace("git-mirrors", "git-mirror")
        raise click.BadParameter(str(error["msg"]).removeprefix("Value error, "), param_hint=option) from None


_SANDBOX_OPTIONS = (
    click.option(
        "--sandbox",
        "--backend",  # the name `sandbox build` used: accepted, so that one name works on every command
        "sandbox",
        type=str,
        default=Default(SANDBOX + "backend"),
        show_default=True,
        help="auto (bwrap where it works, else local), local (not isolated), bwrap or docker.",
    ),
    click.option(
        "--task-python",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Interpreter the task environments are layered over, with its packages. "
        "[default: SUPER's environment if `super-bench sandbox build` made it, else a minimal one]",
    ),
    click.option("--keep-workdirs", is_flag=True, help="Keep each task's working directory after it ends."),
    click.option(
        "--network",
        type=click.Choice(["on", "off"]),
        default=Default(SANDBOX + "network", lambda allowed: "on" if allowed else "off"),
        show_default=True,
        help="Whether agent code may use the network (bwrap and docker can cut it).",
    ),
    click.option(
        "--memory-limit",
        metavar="SIZE",
        callback=_size,
        help="Memory a task may use in all, shared memory included, e.g. 8g (see --memory-enforcement).",
    ),
    click.option(
        "--memory-enforcement",
        type=click.Choice(MEMORY_ENFORCEMENTS),
        default=Default(SANDBOX + "memory_enforcement"),
        show_default=True,
        help="How --memory-limit is enforced (local, bwrap): a cgroup of the task's own (auto: where one can be "
        "made), else an address-space limit per process. `super-bench sandbox check` says which works here.",
    ),
    click.option(
        "--max-processes",
        type=click.IntRange(min=1),
        default=Default(SANDBOX + "max_processes"),
        show_default=True,
        help="Processes and threads a task may run at once (bwrap, docker).",
    ),
    click.option(
        "--max-file-size", metavar="SIZE", callback=_size, help="Largest file agent code may write, e.g. 20g."
    ),
    click.option(
        "--disk-limit",
        metavar="SIZE",
        callback=_size,
        help="Disk a task directory may take, e.g. 20g (local, bwrap); tasks wait until that much is free.",
    ),
    click.option(
        "--disk-enforcement",
        type=click.Choice(DISK_ENFORCEMENTS),
        default=Default(SANDBOX + "disk_enforcement"),
        show_default=True,
        help="How --disk-limit is enforced: a file system of the task's own, where writes past it fail (auto: "
        "as root), or a watch that stops the task past it. `super-bench sandbox check` says which works here.",
    ),
    click.option(
        "--package-cache",
        type=click.Choice(PACKAGE_CACHE_MODES),
        default=Default(SANDBOX + "package_cache"),
        show_default=True,
        help="pip in tasks installs through the harness's cache of the package index, shared by tasks and runs; "
        "link: installed files of wheels are read-only links to the cache where agent code runs as a user of its "
        "own; copy: always copies; off: pip goes to the index itself.",
    ),
    click.option(
        "--wall-time-limit",
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds after which everything a task runs is killed and its episode ends.",
    ),
    click.option("--image", help="Image for --sandbox docker. [default: the one `super-bench sandbox build` makes]"),
    click.option("--engine", type=click.Choice(["docker", "podman"]), help="Container engine for --sandbox docker."),
    click.option(
        "--ca-bundle",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="A CA bundle shown read-only to tasks in --sandbox docker, for pip, requests, OpenSSL and git (the "
        "host's trust store, behind a TLS-intercepting proxy).",
    ),
    git_mirror_option,
    click.option(
        "--packages-as-of",
        metavar="DATE",
        help="pip inside tasks installs only what was uploaded by then: 2024-03-01 (the end of that day, UTC) "
        "or 2024-03-01T12:00:00Z. Needs pip 26+ in the task Python and an index with upload times.",
    ),
    click.option(
        "--pip-index", metavar="URL", help="The package index (or proxy) pip inside tasks uses, and no other."
    ),
    click.option(
        "--hf-cache",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="A Hugging Face cache (an HF_HOME or its hub folder) shown read-only to tasks; models and datasets "
        "load from it, offline.",
    ),
    click.option(
        "--pass-env",
        multiple=True,
        metavar="NAME",
        help="Give agent code this variable of your environment as it is, credentials included (repeatable): "
        "otherwise credentials, your pip configuration and your other settings are kept from tasks.",
    ),
    click.option(
        "--host-pip-config",
        is_flag=True,
        help="Let pip in tasks read your pip configuration (PIP_* variables; pip.conf files, except under docker) "
        "where it goes to the index itself (--package-cache off, no --pip-index). Off: it knows only what "
        "super-bench sets.",
    ),
    click.option(
        "--offline-bundle",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Run from what `super-bench mirror` bundled: repositories from their git bundles, pip from its wheels.",
    ),
)


# The sandbox options named as the SandboxConfig settings they set, and the SandboxConfig setting of each option.
_SAME_NAMED = (
    "memory_limit",
    "memory_enforcement",
    "max_processes",
    "max_file_size",
    "disk_limit",
    "disk_enforcement",
    "package_cache",
    "wall_time_limit",
    "image",
    "engine",
    "ca_bundle",
    "git_mirrors",
    "pip_index",
    "packages_as_of",
    "hf_cache",
    "offline_bundle",
    "pass_env",
    "host_pip_config",
)
SANDBOX_SETTINGS = {
    "sandbox": "backend",
    "task_python": "task_python",
    "keep_workdirs": "keep",
    "network": "network",
    **{name: name for name in _SAME_NAMED},
}


def given_sandbox_settings(sandbox: SandboxConfig) -> dict[str, Any]:
    """The settings of ``sandbox`` (made by ``sandbox_options``) whose options the command line gave: those
    left at their defaults are not in it."""
    context = click.get_current_context()
    return {
        setting: getattr(sandbox, setting)
        for name, setting in SANDBOX_SETTINGS.items()
        if context.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    }


def sandbox_options(function: F) -> F:
    """The sandbox's options (--sandbox, --network, the limits, ...), passed on as one ``sandbox``
    argument: a ``SandboxConfig``."""

    @functools.wraps(function)
    def with_config(
        *args: Any, sandbox: str, task_python: Path | None, keep_workdirs: bool, network: str, **kwargs: Any
    ) -> Any:
        from pydantic import ValidationError

        from super_bench.sandbox import SandboxConfig

        try:
            config = SandboxConfig(
                backend=sandbox,
                task_python=task_python,
                keep=keep_workdirs,
                network=network == "on",
                **{name: kwargs.pop(name) for name in _SAME_NAMED},
            )
        except ValidationError as e:
            error = e.errors()[0]
            field = str(error["loc"][0]) if error["loc"] else "backend"
            option = {"git_mirrors": "--git-mirror", "backend": "--sandbox"}.get(field, "--" + field.replace("_", "-"))
            raise click.BadParameter(str(error["msg"]).removeprefix("Value error, "), param_hint=option) from None
        return function(*args, sandbox=config, **kwargs)

    wrapped: F = with_config  # type: ignore[assignment]
    for option in reversed(_SANDBOX_OPTIONS):
        wrapped = option(wrapped)
    return wrapped


def gold_run_options(function: F) -> F:
    """The sandbox's options, --cell-timeout and --max-compute, for commands that check tasks with gold runs."""
    function = click.option(
        "--max-compute",
        type=click.FloatRange(min=0, min_open=True),
        default=Default(ENV + "max_compute"),
        show_default=True,
        help="Seconds of execution a gold run may take.",
    )(function)
    function = click.option(
        "--cell-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=Default(ENV + "cell_timeout"),
        show_default=True,
        help="Soft timeout of a cell in the gold runs, in seconds (gold cells are waited for).",
    )(function)
    return sandbox_options(function)

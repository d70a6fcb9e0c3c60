"""Each default, name and the version is written once: the CLI takes its defaults from the config models
(and functions) that define them, lists of names come from their types, the version from the package's
metadata."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from importlib import resources
from importlib.metadata import version
from pathlib import Path
from typing import Any, get_args

import click
import pytest
from tests.support.helpers import cli

import super_bench
from super_bench import EnvConfig, RunConfig, SandboxConfig
from super_bench._names import BUDGET_STOPS, METRICS, SCORE_MODES, TASK_SETS, TaskStatus
from super_bench.cli import main
from super_bench.construct.autogen import autogen
from super_bench.construct.gold import gold_env
from super_bench.construct.notebook import notebook_task
from super_bench.environment.env import DEFAULT_MAX_TOKENS
from super_bench.integrations.server.sessions import SessionManager
from super_bench.runner.config import AgentChoice, Execution, RayOptions, TaskChoice
from super_bench.scoring import Metrics, ScoreMode
from super_bench.tasks.checks import check_tasks
from super_bench.tasks.model import DEFAULT_MIN_RUNTIME, TaskSet
from super_bench.trajectory import StepOutcome, StopReason

PACKAGE = Path(super_bench.__file__).parent


# -- the version -------------------------------------------------------------------------------------
def test_the_version_is_written_only_in_pyproject() -> None:
    assert super_bench.__version__ == version("super-bench")
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                assert "__version__" not in names, f"{path} writes the version down"
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"super-bench, version {version('super-bench')}"


# -- names -------------------------------------------------------------------------------------------
def test_lists_of_names_are_those_of_their_types() -> None:
    assert tuple(Metrics.model_fields) == METRICS
    assert get_args(TaskSet) == TASK_SETS
    assert get_args(ScoreMode) == SCORE_MODES
    assert set(BUDGET_STOPS) < set(get_args(StopReason))


def test_the_viewer_takes_every_name_it_compares_with_from_python() -> None:
    from super_bench.report.viewer import names

    script = resources.files("super_bench.report").joinpath("static", "viewer.js").read_text(encoding="utf-8")
    compared = set(re.findall(r'[!=]==?\s*"([^"]*)"', script)) | set(re.findall(r'"([^"]*)"\s*[!=]==?', script))
    known = {*METRICS, *TASK_SETS, *get_args(TaskStatus), *get_args(StepOutcome), *get_args(StopReason)}
    assert not compared & known
    assert not re.search(r"\[\s*\"output_match\"", script)  # no list of metrics of its own
    given = names()
    assert given["metrics"] == list(METRICS) and given["completed"] in get_args(TaskStatus)
    assert given["ok"] in get_args(StepOutcome) and given["submitted"] in METRICS


# -- CLI defaults ------------------------------------------------------------------------------------
def command(*path: str) -> click.Command:
    found: click.Command = main
    ctx = click.Context(main)
    for name in path:
        assert isinstance(found, click.Group)
        sub = found.get_command(ctx, name)
        assert sub is not None, path
        found = sub
    return found


def default_value(path: tuple[str, ...], param: click.Parameter) -> Any:
    """The option's default, None where it has none (click marks that with a sentinel of its own)."""
    value = param.get_default(click.Context(command(*path)))
    return None if type(value).__module__.startswith("click") else value


def cli_default(path: tuple[str, ...], option: str) -> Any:
    (param,) = [p for p in command(*path).params if p.name == option]
    return default_value(path, param)


def model_field(model: type[Any], field: str) -> Callable[[pytest.MonkeyPatch, Any], Any]:
    """Reads the field's default; with a value, sets it for the test first."""

    def use(monkeypatch: pytest.MonkeyPatch, value: Any = None) -> Any:
        info = model.model_fields[field]
        if value is not None:
            monkeypatch.setattr(info, "default", value)
        return info.default

    return use


def keyword(function: Callable[..., Any], name: str) -> Callable[[pytest.MonkeyPatch, Any], Any]:
    """Reads a keyword-only parameter's default; with a value, sets it for the test first."""

    def use(monkeypatch: pytest.MonkeyPatch, value: Any = None) -> Any:
        defaults = function.__kwdefaults__
        assert defaults is not None
        if value is not None:
            monkeypatch.setitem(defaults, name, value)
        return defaults[name]

    return use


ON_OFF = {True: "on", False: "off"}.__getitem__


def same(value: Any) -> Any:
    return value


# (command, option, where its default is defined, another value it could have there, the option's spelling of it)
FOLLOWED: list[tuple[tuple[str, ...], str, Callable[..., Any], Any, Callable[[Any], Any]]] = [
    (("run",), "cell_timeout", model_field(EnvConfig, "cell_timeout"), 42.0, same),
    (("run",), "max_steps", model_field(EnvConfig, "max_steps"), 7, same),
    (("run",), "max_compute", model_field(EnvConfig, "max_compute"), 99.0, same),
    (("run",), "output_limit", model_field(EnvConfig, "episode_output_limit"), 5000, same),
    (("run",), "sandbox", model_field(SandboxConfig, "backend"), "bwrap", same),
    (("run",), "network", model_field(SandboxConfig, "network"), False, ON_OFF),
    (("run",), "memory_enforcement", model_field(SandboxConfig, "memory_enforcement"), "cgroup", same),
    (("run",), "max_processes", model_field(SandboxConfig, "max_processes"), 64, same),
    (("run",), "source", model_field(TaskChoice, "source"), "hf", same),
    (("run",), "agent", model_field(AgentChoice, "name"), "react", same),
    (("run",), "mode", model_field(RunConfig, "mode"), "reference", same),
    (("run",), "executor", model_field(Execution, "executor"), "ray", same),
    (("run",), "infra_retries", model_field(Execution, "infra_retries"), 5, same),
    (("run",), "epochs", model_field(Execution, "epochs"), 3, same),
    (("run",), "order", model_field(Execution, "order"), "given", same),
    (("run",), "ray_cpus", model_field(RayOptions, "cpus"), 2.0, same),
    (("run",), "ray_gpus", model_field(RayOptions, "gpus"), 1.0, same),
    (("play",), "max_steps", model_field(EnvConfig, "max_steps"), 7, same),
    (("doctor",), "cell_timeout", model_field(EnvConfig, "cell_timeout"), 42.0, same),
    (("doctor",), "max_compute", model_field(EnvConfig, "max_compute"), 99.0, same),
    (("construct", "mask"), "network", model_field(SandboxConfig, "network"), False, ON_OFF),
    (("score",), "mode", model_field(RunConfig, "mode"), "reference", same),
    (("sandbox", "build"), "backend", model_field(SandboxConfig, "backend"), "docker", same),
    (("serve",), "max_sessions", keyword(SessionManager.__init__, "max_sessions"), 9, same),
    (("serve",), "idle_timeout", keyword(SessionManager.__init__, "idle_timeout"), 60.0, same),
    (("serve",), "sources", keyword(SessionManager.__init__, "sources"), ("hf",), same),
    (("tasks", "validate"), "regex_timeout", keyword(check_tasks, "regex_timeout"), 5.0, same),
    (("construct", "from-notebook"), "max_landmarks", keyword(notebook_task, "max_landmarks"), 6, same),
    (("construct", "autogen"), "per_repo", keyword(autogen, "per_repo"), 2, same),
]


@pytest.mark.parametrize(
    ("path", "option", "owner", "other", "spelt"), FOLLOWED, ids=[f"{' '.join(p)} {o}" for p, o, *_ in FOLLOWED]
)
def test_a_cli_default_is_the_one_its_setting_defines(
    path: tuple[str, ...],
    option: str,
    owner: Callable[..., Any],
    other: Any,
    spelt: Callable[[Any], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert cli_default(path, option) == spelt(owner(monkeypatch))
    # Where the setting's default changes, the command line's changes with it.
    owner(monkeypatch, other)
    assert cli_default(path, option) == spelt(other)


CONFIGS = {"": (EnvConfig, SandboxConfig, RunConfig, TaskChoice, AgentChoice, Execution), "ray_": (RayOptions,)}
RENAMED = {
    "sandbox": "backend",
    "keep_workdirs": "keep",
    "output_limit": "episode_output_limit",
    "agent": "name",
    "ray_memory_gb": "ray_memory_gb",
}


def config_options() -> Iterator[tuple[tuple[str, ...], click.Option, Any]]:
    """Every option of the commands that build these configs whose name is a config field, with the field's
    default."""
    for path in (("run",), ("play",), ("serve",), ("doctor",), ("score",), ("construct", "mask")):
        for param in command(*path).params:
            if not isinstance(param, click.Option) or param.name is None:
                continue
            for prefix, models in CONFIGS.items():
                field = RENAMED.get(param.name, param.name).removeprefix(prefix)
                for model in models:
                    if param.name.startswith(prefix) and field in model.model_fields:
                        yield path, param, model.model_fields[field].get_default(call_default_factory=True)


def test_every_option_named_after_a_config_field_defaults_as_the_field() -> None:
    checked = 0
    for path, param, expected in config_options():
        got = default_value(path, param)
        if param.name == "network":
            got = got == "on"
        empty = (None, (), [], {})
        assert got == expected or (got in empty and expected in empty), (path, param.name, got, expected)
        checked += 1
    assert checked > 40


def test_defaults_the_help_describes_are_the_real_ones() -> None:
    help_text = " ".join(cli("run", "--help").stdout.split())
    tokens = {s: f"{n // 1000}k" for s, n in DEFAULT_MAX_TOKENS.items()}
    assert f"[default: {tokens['expert']}; {tokens['masked']} for masked]" in help_text
    assert tokens["auto"] == tokens["expert"]
    autogen_help = " ".join(cli("construct", "autogen", "--help").stdout.split())
    assert f"[default: {DEFAULT_MIN_RUNTIME:g}, the paper's]" in autogen_help


def test_other_front_ends_default_as_the_config_models() -> None:
    from super_bench.integrations.inspect_ext.tasks import TaskOptions

    assert TaskOptions().env() == EnvConfig()
    assert TaskOptions().mode == RunConfig().mode
    assert gold_env() == EnvConfig(max_steps=None)

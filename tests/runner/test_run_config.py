"""RunConfig in parts: the flat names of before are still read and written, a setting given twice is refused, and
the command line's options are made from the parts' fields (serve and mcp share theirs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from super_bench import EnvConfig, RunConfig
from super_bench.cli import main
from super_bench.runner.config import FLAT, AgentChoice, Execution, RayOptions, TaskChoice
from super_bench.runner.manifest import identity


def test_flat_names_land_in_their_parts() -> None:
    config = RunConfig(  # type: ignore[call-arg]
        source="hf", task_set="masked", agent="react", model="mock/m", seed=3, workers=2, executor="ray", epochs=2
    )
    assert (config.tasks.source, config.tasks.task_set) == ("hf", "masked")
    assert (config.agent.name, config.agent.model, config.agent.seed) == ("react", "mock/m", 3)
    assert (config.execution.workers, config.execution.executor, config.execution.epochs) == (2, "ray", 2)
    grouped = RunConfig(
        tasks=TaskChoice(source="hf", task_set="masked"),
        agent=AgentChoice(name="react", model="mock/m", seed=3),
        execution=Execution(workers=2, executor="ray", epochs=2),
    )
    assert config == grouped and identity(config) == identity(grouped)


def test_flat_and_grouped_names_mix_and_a_setting_given_twice_is_refused() -> None:
    config = RunConfig.model_validate({"agent": {"name": "react"}, "model": "mock/m", "execution": {"workers": 3}})
    assert (config.agent.name, config.agent.model, config.execution.workers) == ("react", "mock/m", 3)
    with pytest.raises(ValidationError, match=r"workers is given twice: as workers and as execution\.workers"):
        RunConfig.model_validate({"workers": 2, "execution": {"workers": 3}})
    with pytest.raises(ValidationError, match="model is given twice"):
        RunConfig.model_validate({"model": "a/b", "agent": AgentChoice(name="react", model="c/d")})
    with pytest.raises(ValidationError, match="bogus"):
        RunConfig.model_validate({"bogus": 1})


def test_a_copy_takes_flat_names_too() -> None:
    config = RunConfig(agent=AgentChoice(name="react", seed=1), execution=Execution(workers=2))
    copy = config.model_copy(update={"seed": 2, "infra_retries": 0, "agent": "swe-agent", "out": Path("x")})
    assert (copy.agent.name, copy.agent.seed, copy.execution.workers, copy.execution.infra_retries) == (
        "swe-agent",
        2,
        2,
        0,
    )
    assert copy.out == Path("x") and (config.agent.name, config.agent.seed, config.execution.infra_retries) == (
        "react",
        1,
        2,
    )


def test_run_json_keeps_the_flat_names_and_reads_back() -> None:
    config = RunConfig(
        tasks=TaskChoice(task_ids=["tinyreg"]),
        agent=AgentChoice(name="react", settings={"temperature": 0}),
        execution=Execution(ray=RayOptions(cpus=2)),
        env=EnvConfig(cell_timeout=60),
        out=Path("runs/x"),
    )
    flat = config.flat()
    assert {"tasks", "execution"}.isdisjoint(flat) and set(FLAT) <= set(flat)
    assert (flat["agent"], flat["agent_settings"], flat["ray"]["cpus"], flat["task_ids"]) == (
        "react",
        {"temperature": 0},
        2,
        ["tinyreg"],
    )
    assert RunConfig.model_validate(flat) == config
    named = identity(config)
    assert (named["agent"], named["agent_settings"], named["env.cell_timeout"]) == ("react", {"temperature": 0}, 60)


@given(
    agent=st.sampled_from(["gold", "react", "replay:a.json"]),
    workers=st.none() | st.integers(1, 64),
    seed=st.none() | st.integers(-(2**31), 2**31),
    limit=st.none() | st.integers(1, 1000),
)
def test_any_config_reads_back_from_its_flat_form(
    agent: str, workers: int | None, seed: int | None, limit: int | None
) -> None:
    config = RunConfig.model_validate({"agent": agent, "workers": workers, "seed": seed, "limit": limit})
    assert RunConfig.model_validate(config.flat()) == config


def _command(name: str) -> click.Command:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    return command


def _options(name: str) -> dict[str, click.Option]:
    return {p.name: p for p in _command(name).params if isinstance(p, click.Option) and p.name is not None}


def test_run_has_an_option_for_every_setting_of_its_parts_with_the_fields_help() -> None:
    options = _options("run")
    fields: list[tuple[str, Any]] = [
        *((name, TaskChoice.model_fields[name]) for name in TaskChoice.model_fields if name != "task_set"),
        ("agent", AgentChoice.model_fields["name"]),
        ("model", AgentChoice.model_fields["model"]),
        ("seed", AgentChoice.model_fields["seed"]),
        *((name, Execution.model_fields[name]) for name in Execution.model_fields if name != "ray"),
        *((f"ray_{name}", RayOptions.model_fields[name]) for name in RayOptions.model_fields),
        *((name, RunConfig.model_fields[name]) for name in ("mode", "out", "redo", "adopt")),
    ]
    for name, field in fields:
        assert name in options, f"run has no option for {name}"
        assert options[name].help == field.description, name
    assert options["ray_memory_gb"].opts == ["--ray-memory"] and options["task_set"].opts == ["--set"]


def test_serve_and_mcp_share_their_options() -> None:
    serve, mcp = _options("serve"), _options("mcp")
    assert set(serve) <= set(mcp) and set(mcp) - set(serve) == {"use_http", "out", "agent_name", "model"}
    for name in serve:
        assert type(serve[name].type) is type(mcp[name].type), name
    assert (serve["port"].default, mcp["port"].default) == (8765, 8766)


def test_a_generated_option_reads_and_checks_its_value(tmp_path: Path) -> None:
    from tests.support.helpers import cli

    result = cli("run", "--workers", "0", "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "--workers" in result.stderr and "0" in result.stderr
    result = cli("run", "--prestart", "sometimes", "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "'sometimes' is not one of 'auto', 'off'" in result.stderr

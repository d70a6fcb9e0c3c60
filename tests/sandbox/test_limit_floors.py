"""Limits are checked before anything starts: a memory limit under which no notebook kernel could start is
refused, naming the least that works and why, with nothing written; sizes are read and said in human units."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.support.helpers import cli, make_task
from tests.support.sandboxes import backend_settings

from super_bench import EnvConfig, Environment, SandboxConfig
from super_bench._sizes import human_size, parse_size
from super_bench.errors import ConfigError
from super_bench.sandbox import check_backend
from super_bench.sandbox.config import MIN_DISK_LIMIT
from super_bench.sandbox.limits.memory import KERNEL_MEMORY, memory_mechanism


@pytest.mark.parametrize(
    ("size", "shown"), [(10, "10 B"), (1 << 20, "1 MiB"), (64 << 20, "64 MiB"), (3 << 29, "1.5 GiB")]
)
def test_sizes_are_said_in_human_units(size: int, shown: str) -> None:
    assert human_size(size) == shown


@given(st.integers(min_value=0, max_value=1 << 50))
def test_a_size_said_reads_back_close_to_itself(size: int) -> None:
    number, unit = human_size(size).split()
    back = parse_size(number + unit.removesuffix("B").removesuffix("i"))
    assert abs(back - size) <= size * 0.006 + 1


@pytest.mark.parametrize("limit", ["64m", "10", "1m"])
def test_a_memory_limit_no_kernel_could_start_under_is_refused_before_anything_starts(
    tmp_path: Path, limit: str
) -> None:
    result = cli("run", "--sandbox", "local", "--memory-limit", limit, "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    need = KERNEL_MEMORY[memory_mechanism()]
    assert f"--memory-limit {human_size(parse_size(limit))} is below the {human_size(need)}" in line, line
    assert "notebook kernel needs to start in the local sandbox" in line and f"{need >> 20}m or more" in line
    assert list(tmp_path.iterdir()) == []  # no run directory, no sandbox


def test_the_least_memory_a_kernel_needs_is_enough_for_it(env_factory: object, tmp_sandbox_root: Path) -> None:
    # The floor is a measurement, not a guess: at it a kernel starts and runs a cell that imports NumPy.
    for backend in ("local", "bwrap"):
        settings = {"backend": "local"} if backend == "local" else backend_settings("bwrap")
        need = KERNEL_MEMORY[memory_mechanism()]
        config = SandboxConfig(root=tmp_sandbox_root, memory_limit=need, **settings)
        check_backend(config)
        with Environment(EnvConfig(cell_timeout=60, sandbox=config)) as env:
            env.reset(make_task())
            step = env.step({"type": "execute", "content": "import numpy\nprint(6 * 7)"})
            assert "42" in step.observation, step.observation
        with pytest.raises(ConfigError, match=re.escape(f"below the {human_size(need)}")):
            check_backend(config.model_copy(update={"memory_limit": need - (1 << 20)}))


def test_the_address_space_floor_is_said_for_that_mechanism() -> None:
    config = SandboxConfig(backend="local", memory_limit="600m", memory_enforcement="address-space")
    with pytest.raises(ConfigError, match=r"600 MiB is below the 1 GiB .* per process \(address-space\); give "):
        check_backend(config)


def test_a_disk_limit_below_the_least_says_it_in_mib(tmp_path: Path) -> None:
    result = cli("run", "--disk-limit", "10", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert result.returncode == 2 and "16 MiB" in result.stderr and "16777216" not in result.stderr, result.stderr
    assert "10 B is below the least allowed" in result.stderr
    with pytest.raises(ValidationError, match="0 is below the least allowed, 1 B"):
        SandboxConfig(max_file_size=0)
    assert SandboxConfig(disk_limit=MIN_DISK_LIMIT).disk_limit == MIN_DISK_LIMIT
    assert list(tmp_path.iterdir()) == []


def test_sandbox_check_says_the_least_memory_limit() -> None:
    result = cli("sandbox", "check")
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())
    need = human_size(KERNEL_MEMORY[memory_mechanism()])
    assert f"the least a run accepts: {need}, what a notebook kernel needs" in shown, shown

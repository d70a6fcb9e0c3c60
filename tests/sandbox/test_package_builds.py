"""Installs that build: sdists whose build dependencies pip fetches into an isolated build environment, through
the package cache in every mode, with build isolation on and off; the kernel restarts afterwards; and the base's
packages never leak into pip's isolated build."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import backend_settings
from tests.support.source_packages import backend_wheel, sdist

UPLOADED = "2024-01-01T00:00:00Z"


def source_index(directory: Path) -> dict[str, dict[str, tuple[Path, str]]]:
    directory.mkdir()
    return {
        "sbbackend": {"1.0": (backend_wheel(directory), UPLOADED)},
        "sbsdist": {"1.0": (sdist(directory, "sbsdist"), UPLOADED)},
    }


CASES = [(mode, isolation, "paper") for mode in ("link", "copy", "off") for isolation in ("isolated", "no-isolation")]


@pytest.mark.parametrize(("mode", "isolation", "pip"), [*CASES, ("link", "isolated", "current")])
def test_an_sdist_with_a_build_dependency_installs_in_every_cache_mode_and_the_kernel_restarts_after(
    env_factory: Any, tmp_path: Path, mode: str, isolation: str, pip: str
) -> None:
    with package_index(source_index(tmp_path / "packages")) as (index, _):
        sandbox = {**backend_settings("bwrap"), "pip_index": index, "package_cache": mode}
        sandbox["package_cache_dir"] = tmp_path / "cache"
        if pip == "current":
            sandbox["task_python"] = sys.executable  # the harness's own environment: today's pip, and numpy
        env = env_factory(cell_timeout=180, sandbox=sandbox)
        env.reset(make_task())
        version = env.step({"type": "execute", "content": "!pip --version"}).raw_output
        assert version.startswith("pip 24.0 " if pip == "paper" else f"pip {metadata.version('pip')} "), version
        if isolation == "isolated":
            install = "!pip install sbsdist 2>&1 | tail -25"
        else:
            install = "!pip install sbbackend 2>&1 | tail -2 && pip install --no-build-isolation sbsdist 2>&1 | tail -5"
        step = env.step({"type": "execute", "content": install})
        assert "Successfully installed" in step.raw_output and "sbsdist-1.0" in step.raw_output, step.raw_output
        died = env.step({"type": "execute", "content": "import os\nos._exit(0)"})
        assert died.outcome == "kernel_died"
        check = env.step(
            {"type": "execute", "content": "import sbsdist, numpy; print(sbsdist.VALUE, sbsdist.BUILT_WITH)"}
        )
        assert env._kernel.restarts == 1
        env.close()
    # numpy is in the task's base: pip's isolated build must not see it, as it would not in a plain virtual
    # environment (a build without isolation sees everything the task does).
    assert check.raw_output.strip() == ("7 []" if isolation == "isolated" else "7 ['numpy']"), check.raw_output

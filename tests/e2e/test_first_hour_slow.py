"""The README's long commands (the slow tier of test_first_hour), each run as written in a folder of its
own and checked for its exit status and a table whole at 80 columns. Each is a class of its own, so that
`pytest -n auto --dist loadscope` runs them on different workers at once; the run of the Masked set and the
construction of Masked tasks are the session's shared ones (tests/support/shared_runs.py), which test_demo_suite
and test_construct_mask check too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_first_hour import CHECKS, bwrap_runs, readme_blocks, readme_commands, table_lines
from tests.support.shared_runs import Home, SharedRuns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

MASKED = "super-bench run --set masked"
MASK = "super-bench construct mask --out masked.jsonl"
DOCTOR = "super-bench doctor --set masked"
ISOLATED = "super-bench run --network off --memory-limit 8g"
WORKERS = "super-bench run --set masked --workers 4 --out runs/masked"


def test_every_slow_readme_command_is_run_here() -> None:
    assert {c for c in readme_commands() if CHECKS[c].how == "slow"} == {MASKED, MASK, DOCTOR, ISOLATED, WORKERS}


def ran(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stdout + result.stderr
    table_lines(result.stdout)


class TestMaskedRun:
    def test_the_masked_set_runs(self, shared_runs: SharedRuns) -> None:
        ran(shared_runs.get(MASKED).result)


class TestConstructMask:
    def test_masked_tasks_are_cut_and_checked(self, shared_runs: SharedRuns) -> None:
        shared = shared_runs.get(MASK)  # shared with tests/construct/test_construct_mask.py, which reads the tasks
        ran(shared.result)
        assert (shared.home / "masked.jsonl").is_file()


class TestDoctor:
    def test_doctor_finds_no_rot_in_the_demo(self, tmp_path: Path) -> None:
        ran(Home(tmp_path).sh(DOCTOR))


class TestIsolatedRun:
    def test_an_isolated_run_without_network(self, tmp_path: Path) -> None:
        if not bwrap_runs():
            pytest.skip("the README says it: isolated by bwrap, which cannot run here")
        ran(Home(tmp_path).sh(ISOLATED))


class TestWorkersAndResume:
    def test_four_at_once_then_resumed(self, tmp_path: Path) -> None:
        user = Home(tmp_path)
        ran(user.sh(WORKERS))
        resumed = user.sh(WORKERS)
        assert "already finished" in resumed.stderr


class TestPythonBlock:
    def test_the_readme_python_runs_whole(self, tmp_path: Path) -> None:
        (block,) = readme_blocks("python")
        result = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, result.stderr
        assert "writing runs/" in result.stderr and "17/17" in result.stderr  # the run's progress, on stderr

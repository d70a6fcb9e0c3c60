"""The test tiers: plain ``pytest`` runs every test; ``pytest -m "not slow"`` leaves out the long end-to-end runs; CI
runs the README's command, every test in parallel."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_fast_tier_leaves_out_the_slow_tests_and_keeps_most() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not slow"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    counts = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", result.stdout)
    assert counts, result.stdout[-2000:] + result.stderr[-2000:]
    fast, everything, slow = map(int, counts.groups())
    assert fast >= 250 and slow > 0 and fast + slow == everything


def test_ci_runs_the_readmes_test_command_in_parallel() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"pip install -e '\.\[test\]' && (pytest[^\n]*)", readme)
    assert command, "the README's test command"
    assert "-n auto" in command.group(1)  # as many workers as tests/conftest.py says: two per CPU
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # CI adds a report of the slowest tests, which changes no test that runs.
    assert ci[-1] == f"SUPER_BENCH_REQUIRE_SANDBOXES=$require {command.group(1)} --durations=15"


def test_workers_write_byte_code_whatever_the_environment_says() -> None:
    # tests/conftest.py keeps it in the user's cache where PYTHONDONTWRITEBYTECODE is set, as `super-bench` does.
    assert not sys.dont_write_bytecode
    assert sys.pycache_prefix is not None or not os.environ.get("PYTHONDONTWRITEBYTECODE")


class _Item:
    def __init__(self, path: str, slow: bool) -> None:
        self.path, self.slow = Path(path), slow

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "slow" and self.slow else None


def test_files_with_long_runs_are_handed_out_first_then_the_largest() -> None:
    from tests.conftest import pytest_collection_modifyitems

    items = [_Item("a.py", False), _Item("b.py", False), _Item("b.py", False), _Item("c.py", False)]
    items += [_Item("c.py", True), _Item("d.py", False), _Item("d.py", False), _Item("d.py", False)]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [(i.path.name, i.slow) for i in items] == [
        ("c.py", False), ("c.py", True), ("d.py", False), ("d.py", False), ("d.py", False),
        ("b.py", False), ("b.py", False), ("a.py", False),
    ]  # fmt: skip

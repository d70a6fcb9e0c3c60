"""The demo suite's generated files match their sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script", ["demo/build_bundles.py", "demo/tasks.py"])
def test_generated_demo_files_are_up_to_date(script: str) -> None:
    result = subprocess.run([sys.executable, script, "--check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

"""The test tiers: plain ``pytest`` runs every test; ``pytest -m "not slow"`` leaves out the long end-to-end runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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

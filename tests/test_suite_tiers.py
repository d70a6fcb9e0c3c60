"""The test tiers: plain ``pytest`` runs every test; ``pytest -m "not slow"`` leaves out the long end-to-end runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def collected(*args: str) -> int:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    found = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", result.stdout)
    assert found, result.stdout[-2000:] + result.stderr[-2000:]
    return int(found.group(1))


def test_the_fast_tier_leaves_out_only_the_slow_tests() -> None:
    everything = collected()
    fast = collected("-m", "not slow")
    slow = collected("-m", "slow")
    assert fast >= 250 and slow > 0
    assert fast + slow == everything

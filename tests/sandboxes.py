"""Helpers for the sandbox tests: which backends run here, and processes found by their command line."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from typing import Any

import pytest

from super_bench.errors import SandboxError
from super_bench.sandbox import SANDBOXES, SandboxConfig

# The docker backend is tested with this image (default: the one `sandbox build --backend docker` makes).
TEST_IMAGE = os.environ.get("SUPER_BENCH_TEST_IMAGE")
BACKENDS = ["local", "bwrap", "docker"]


def backend_settings(name: str) -> dict[str, Any]:
    """Sandbox settings for ``name``; skips the test, saying why, where the backend cannot run."""
    settings: dict[str, Any] = {"backend": name}
    if name == "docker" and TEST_IMAGE:
        settings["image"] = TEST_IMAGE
    try:
        SANDBOXES.get(name).check(SandboxConfig(**settings))
    except SandboxError as e:
        pytest.skip(f"the {name} sandbox cannot run here: {e}")
    return settings


def token() -> str:
    """A number no other process has on its command line: ``sleep 1000.<digits>`` is findable by it."""
    return f"1000.{secrets.randbelow(10**9):09d}"


def pids_with(text: str) -> list[int]:
    """Host PIDs of live (not zombie) processes whose command line contains ``text``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry.name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = bool(condition())
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)

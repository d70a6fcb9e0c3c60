"""`sandbox build` says what it will download before it starts, and at a terminal asks first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from super_bench.sandbox.pyenv.report import TaskEnvironmentInfo
from super_bench.sandbox.pyenv.super_base import BUILD_COST


def test_at_a_terminal_sandbox_build_states_the_download_and_asks_first() -> None:
    controller, terminal = os.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "super_bench", "sandbox", "build"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 60
    while b"Go on? [y/N]" not in seen:
        assert time.monotonic() < deadline, seen
        seen += os.read(controller, 4096)
    os.write(controller, b"n\n")
    assert proc.wait(timeout=30) == 1  # aborted: nothing was built
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", seen.decode()).split())  # without the terminal's styles
    assert f"Building SUPER's task environment: {BUILD_COST}. The bundled demo tasks do not need it." in text
    os.close(controller)


def test_the_minimal_environment_warning_names_the_size_and_that_the_demo_does_not_need_it() -> None:
    report = TaskEnvironmentInfo(kind="default", python="3.11.7", interpreter="python3", missing=["torch"])
    assert "The bundled demo tasks do not need them" in report.summary
    assert "`super-bench sandbox build` (about 6 GB of packages to download)" in report.summary

"""Helpers shared by test modules: the reference data, ad-hoc tasks, the command line, small git repositories,
trajectories, the ReAct format, the viewer's embedded tasks."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from super_bench import Action, Step, Task, Trajectory

# The paper's sample trajectories: beside the repository (<repo>/../shared/...), or where the variable says.
REFERENCE_TRAJECTORIES = Path(
    os.environ.get("SUPER_BENCH_REFERENCE_TRAJECTORIES")
    or Path(__file__).resolve().parents[3] / "shared" / "reference" / "super-trajectories"
)

# Git bundles of real research repositories from SUPER's Expert set, located the same way.
REFERENCE_REPOS = Path(
    os.environ.get("SUPER_BENCH_REFERENCE_REPOS")
    or Path(__file__).resolve().parents[3] / "shared" / "reference" / "repos"
)


def make_task(task_id: str = "t", query: str = "do it", **fields: Any) -> Task:
    return Task(task_id=task_id, query=query, **fields)


T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

# The demo task tinyreg's solution, as a ReAct agent types it.
CLONE = "!git clone -q https://github.com/super-bench-demo/tinyreg"
TRAIN = "!python train.py --config configs/base.json --epochs 5 --limit 50"
ANSWER = '{"test_mse": 7.4031}'


def cli(*args: str, prefix: list[str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``super-bench ARGS`` as a user runs it, in a process of its own."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "super_bench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository with these files, committed."""
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "code"]):
        subprocess.run(command, cwd=path, env=env, check=True)
    return path


def step(
    index: int,
    action: Action | dict[str, Any],
    output: str = "",
    *,
    seconds: float = 1.0,
    start: float = 0.0,
    outcome: str = "ok",
    exit_code: int | None = None,
    raw: str | None = None,
    pre: bool = False,
) -> Step:
    """A recorded step that started ``start`` seconds after T0 and took ``seconds``."""
    return Step(
        index=index,
        action=Action.coerce(action),
        observation=output,
        output=raw,
        outcome=outcome,  # type: ignore[arg-type]
        exit_code=exit_code,
        pre_executed=pre,
        start_time=T0 + timedelta(seconds=start),
        end_time=T0 + timedelta(seconds=start + seconds),
    )


def trajectory(*steps: Step, submission: Any = None, submitted: bool = False, query: str = "q") -> Trajectory:
    return Trajectory(task_id="t", query=query, steps=list(steps), submission=submission, submitted=submitted)


def react(thought: str, action: str, content: str | None = None) -> str:
    """A model reply in the ReAct-SUPER format."""
    return f"Thought: {thought}\nAction: {action}" + (
        f"\n<content>\n{content}\n</content>" if content is not None else ""
    )


def payloads(html: str) -> dict[str, Any]:
    """Each task a viewer page embeds, decoded as the page decodes it."""
    found = re.findall(r'<script type="application/gzip\+base64" id="(t\d+)">([^<]*)</script>', html)
    return {key: json.loads(gzip.decompress(base64.b64decode(blob))) for key, blob in found}


def assert_head_and_tail(full: str, text: str, dropped: int, limit: int) -> None:
    """``text`` is what an output buffer kept of ``full``: all of it, or, ``dropped`` characters gone, a head and a
    tail of it around the marker, together within ``limit``."""
    if not dropped:
        assert text == full
        return
    head, _, tail = text.partition(f"\n[... {dropped:,} characters of output dropped by super-bench ...]\n")
    assert full.startswith(head) and full.endswith(tail)
    assert len(head) + len(tail) + dropped == len(full)
    assert len(head) + len(tail) <= limit

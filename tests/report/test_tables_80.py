"""Tables at 80 columns: a person at a terminal gets them whole, no word cut."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from super_bench import EnvConfig, RunConfig, SandboxConfig, run

STYLES = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    sandbox = SandboxConfig(root=root / "sandboxes")
    config = RunConfig(task_ids=["tinyreg"], out=root / "run", env=EnvConfig(cell_timeout=60, sandbox=sandbox))
    return run(config, progress=False).run_dir.path


def at_a_terminal(*args: str, cwd: Path) -> str:
    """What ``super-bench ARGS`` shows in a terminal of 80 columns, without its styles."""
    controller, terminal = os.openpty()
    env = {**os.environ, "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "super_bench", *args], stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=cwd
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, seen
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the command ended and closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    assert proc.wait(timeout=30) == 0, seen
    return STYLES.sub("", seen.decode()).replace("\r", "")


def test_leaderboard_to_a_terminal_is_a_table_of_whole_words_and_markdown_when_piped(finished_run: Path) -> None:
    from super_bench.report.leaderboard import to_markdown
    from super_bench.report.runs import load_run

    shown = at_a_terminal("leaderboard", str(finished_run), cwd=finished_run.parent)
    assert "|---" not in shown and "│" in shown  # a drawn table, not raw Markdown
    assert all(len(line) <= 80 for line in shown.splitlines())
    words = set(shown.split())
    markdown = to_markdown([load_run(finished_run)])
    cells = [cell for line in markdown.splitlines() if not line.startswith("|--") for cell in line.split("|")]
    for word in {w for cell in cells for w in cell.split()}:
        assert word in words, f"{word!r} is cut: {shown}"

    piped = subprocess.run(
        [sys.executable, "-m", "super_bench", "leaderboard", str(finished_run)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert piped.returncode == 0 and piped.stdout == markdown


def test_leaderboard_with_cause_columns_stays_whole_at_80_columns(finished_run: Path) -> None:
    shown = at_a_terminal("leaderboard", str(finished_run), "--causes", cwd=finished_run.parent)
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    for word in ("environment", "repository", "experiment", "format", "landmarks"):
        assert word in shown.split(), (word, shown)


def test_import_trajectories_shows_its_table_whole_at_80_columns(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "super-trajectories"
    if not source.is_dir():
        pytest.skip("the published trajectories are not here")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "super_bench",
            "import-trajectories",
            str(source / "react-super_expert"),
            "--out",
            "imp",
        ],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), done.stdout
    rows = [json.loads(line) for line in (tmp_path / "imp" / "results.jsonl").read_text().splitlines()]
    words = set(done.stdout.split())
    for row in rows:  # each task's row: its id whole, and its outcome's words whole (wrapped between them)
        outcome = (row["stop_reason"] or "-").replace("_", " ").split()
        assert any(re.match(rf"{re.escape(row['task_id'])}\s+{outcome[0]}\s", line) for line in lines), (
            row["task_id"],
            done.stdout,
        )
        assert set(outcome) <= words, (outcome, done.stdout)


def test_compare_shows_its_tables_whole_at_80_columns(tmp_path: Path) -> None:
    from tests.report.test_reports import masked_ids, write_run

    ids = masked_ids(40)
    base = write_run(tmp_path / "base", {t: float(i % 4 == 0) for i, t in enumerate(ids)}, agent="react")
    other = write_run(tmp_path / "other", {t: float(i % 4 < 2) for i, t in enumerate(ids)}, agent="react-super")
    done = subprocess.run(
        [sys.executable, "-m", "super_bench", "compare", str(base), str(other)],
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    words = set(re.findall(r"[\w%()=.,+\-\[\]]+", done.stdout))
    for word in ("configuration", "dependencies", "significant", "difference", "interval", "landmarks"):
        assert word in words, (word, done.stdout)
    assert "…" not in done.stdout

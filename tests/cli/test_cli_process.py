"""The ``super-bench`` process around its command: byte code kept in a cache directory where it cannot be
written beside the sources, and an exit without the interpreter's teardown that loses no output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from super_bench import load_tasks


def super_bench(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    environ.update(SUPER_BENCH_ENV_CACHE=str(cache), PYTHONDONTWRITEBYTECODE="1", **env)
    return subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, env=environ, timeout=120
    )


def test_byte_code_goes_to_the_cache_where_it_may_not_be_written_beside_the_sources(tmp_path: Path) -> None:
    first = super_bench("tasks", "list", "--json", cache=tmp_path)
    assert first.returncode == 0, first.stderr
    kept = {p.name for p in (tmp_path / "pycache").rglob("*.pyc")}
    assert any(name.startswith("tasks_cmd.") for name in kept), sorted(kept)[:20]
    assert oct((tmp_path / "pycache").stat().st_mode & 0o777) == oct(0o700)
    # The next start reads it, and says the same.
    again = super_bench("tasks", "list", "--json", cache=tmp_path)
    assert again.stdout == first.stdout


def test_a_cache_directory_others_can_write_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "pycache").mkdir(mode=0o777)
    (tmp_path / "pycache").chmod(0o777)
    result = super_bench("tasks", "list", "--json", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not list((tmp_path / "pycache").rglob("*.pyc"))


def test_a_prefix_of_the_users_own_is_kept(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    result = super_bench("tasks", "list", "--json", cache=tmp_path / "cache", PYTHONPYCACHEPREFIX=str(mine))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "cache" / "pycache").exists()  # where byte code goes is the user's to say


@pytest.mark.parametrize(
    ("args", "status", "stream", "text"),
    [
        (["tasks", "list", "--json"], 0, "stdout", '"task_id"'),
        (["run", "--no-such-option"], 2, "stderr", "No such option"),
        (["tasks", "show", "no-such-task"], 2, "stderr", "error:"),
    ],
)
def test_the_exit_status_and_all_output_survive_the_fast_exit(
    tmp_path: Path, args: list[str], status: int, stream: str, text: str
) -> None:
    result = super_bench(*args, cache=tmp_path)
    assert result.returncode == status, result.stderr
    assert text in getattr(result, stream)
    if args[-1] == "--json":  # every line written, the last one whole
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert [r["task_id"] for r in rows] == [t.task_id for t in load_tasks("demo", "expert")]


def test_the_collector_runs_rarely_while_a_command_imports_then_at_its_usual_rhythm() -> None:
    # In a process of its own: the collector's settings are the process's.
    probe = (
        "import gc\n"
        "from super_bench.cli._process import started, starting\n"
        "usual = gc.get_threshold()\n"
        "starting()\n"
        "assert gc.get_threshold() == (100_000, *usual[1:]), gc.get_threshold()\n"
        "import super_bench.environment.env  # what a run imports\n"
        "started()\n"
        "assert gc.get_threshold() == usual, gc.get_threshold()\n"
        "assert gc.get_freeze_count() > 50_000, gc.get_freeze_count()  # the modules' objects, never scanned again\n"
        "started()  # a second call changes nothing\n"
        "assert gc.get_threshold() == usual\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_run_of_a_query_imports_neither_regex_nor_packaging(tmp_path: Path) -> None:
    # Neither is needed once the environments are built (the first run may build them) and no task has landmarks.
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "print(6 * 7)"}]))
    command = [sys.executable, "-X", "importtime", "-m", "super_bench", "run", "--query", "Print 6 * 7."]
    for attempt in ("first", "second"):
        proc = subprocess.run(
            [*command, "--agent", f"replay:{actions}", "--sandbox", "local", "--out", str(tmp_path / attempt)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "super_bench.environment" in imported  # what is read here is the run's own import record
    assert not {name for name in imported if name.split(".")[0] in ("regex", "packaging")}

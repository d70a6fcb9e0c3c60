"""The readers of a run directory (``analyze``, ``score``, ``verify``, ``view``) open its files as regular files
only, never through a link and never waiting on a FIFO, and read none larger than a run writes
(docs/threat-model.md, "Readers of run directories"). A run directory is anyone's data: a ``.lock`` planted as a
link to a file of the reader's must not be truncated, a FIFO ``trajectory.json`` must not hang the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import step, trajectory
from tests.support.sandboxes import backend_settings

from super_bench._files import MAX_RECORD_BYTES, UnsafeFileError, read_regular
from super_bench.errors import RunDirError
from super_bench.report.viewer import build_view
from super_bench.runner.analyze import analyze_run
from super_bench.runner.rescore import read_trajectory, rescore
from super_bench.runner.rundir import RunDir
from super_bench.runner.verify_records import read_rows
from super_bench.trajectory import Trajectory

VICTIM_TEXT = "root:secret-hash:19000:0:99999:7:::\n"


def _timed_out_trajectory(task_id: str) -> str:
    recorded = trajectory(step(0, {"type": "execute", "content": "!x"}, "Killed", outcome="timeout"))
    return recorded.model_copy(update={"task_id": task_id}).model_dump_json()


def _plain_run(out: Path, task_ids: tuple[str, ...] = ("a", "b")) -> Path:
    """A small finished run directory: two tasks with trajectories, rows, tasks and a manifest."""
    (out / "tasks").mkdir(parents=True)
    (out / "run.json").write_text(json.dumps({"schema_version": 1, "config": {}}))
    (out / "tasks.jsonl").write_text(
        "".join(json.dumps({"task_id": t, "query": "q", "answer": 1}) + "\n" for t in task_ids)
    )
    rows = [
        {"task_id": t, "task_set": "expert", "status": "completed", "trajectory": f"tasks/{t}/trajectory.json"}
        for t in task_ids
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for t in task_ids:
        (out / "tasks" / t).mkdir()
        (out / "tasks" / t / "trajectory.json").write_text(_timed_out_trajectory(t))
    return out


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.parametrize(
    ("command", "lock"),
    [
        (["analyze"], ".lock"),
        (["score", "--in-place"], ".lock"),
        (["verify", "--sandbox", "bwrap"], "verify/.lock"),
    ],
)
def test_a_lock_that_is_a_link_leaves_its_target_intact(tmp_path: Path, command: list[str], lock: str) -> None:
    """The attack: a shared run directory whose ``.lock`` links to ``/etc/shadow``; the reader, as root, used to
    truncate the target and write ``pid N`` into it. Now the link is refused, named, and its target untouched."""
    if command[0] == "verify":
        backend_settings("bwrap")
    victim = tmp_path / "shadow"
    victim.write_text(VICTIM_TEXT)
    out = _plain_run(tmp_path / "run")
    (out / lock).parent.mkdir(exist_ok=True)
    (out / lock).symlink_to(victim)
    result = _cli(*command, str(out))
    assert victim.read_text() == VICTIM_TEXT, "the lock's link was followed"
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "is a symbolic link: not followed" in result.stderr and Path(lock).name in result.stderr, result.stderr
    assert (out / lock).is_symlink()  # nothing of the run's was removed in its place either


def test_a_lock_that_is_a_fifo_or_a_directory_is_refused_at_once(tmp_path: Path) -> None:
    out = _plain_run(tmp_path / "run")
    os.mkfifo(out / ".lock")
    with _deadline(10), pytest.raises(RunDirError, match="FIFO"), RunDir(out).lock():
        pass
    (out / ".lock").unlink()
    (out / ".lock").mkdir()
    with _deadline(10), pytest.raises(RunDirError, match="directory"), RunDir(out).lock():
        pass


@pytest.mark.parametrize("command", [["analyze"], ["score", "--in-place"], ["view"], ["verify", "--sandbox", "bwrap"]])
def test_a_fifo_trajectory_is_refused_at_once(tmp_path: Path, command: list[str]) -> None:
    """A ``trajectory.json`` that is a FIFO no one writes: each reader goes on without it, saying why, at once."""
    if command[0] == "verify":
        backend_settings("bwrap")
    out = _plain_run(tmp_path / "run", ("a",))
    (out / "tasks" / "a" / "trajectory.json").unlink()
    os.mkfifo(out / "tasks" / "a" / "trajectory.json")
    started = time.monotonic()
    result = _cli(*command, str(out), timeout=60)
    assert time.monotonic() - started < 30
    assert "Traceback" not in result.stderr, result.stderr
    said = result.stdout + result.stderr
    if command[0] == "view":
        said += (out / "view.html").read_text()
    elif command[0] == "verify":
        said += (out / "verify.jsonl").read_text()
    elif command[0] == "score":
        said += (out / "results.jsonl").read_text()
    assert "FIFO" in said, said


def test_a_replay_folder_planted_as_a_link_is_removed_not_written_through(tmp_path: Path) -> None:
    """``verify`` writes each replay in ``verify/<task>/``: a link planted there, to a folder of the reader's,
    is removed, and the replay written in a folder of its own."""
    backend_settings("bwrap")
    victim = tmp_path / "victim"
    victim.mkdir()
    out = _plain_run(tmp_path / "run", ("a",))
    (out / "verify").mkdir()
    (out / "verify" / "a").symlink_to(victim, target_is_directory=True)
    result = _cli("verify", "--sandbox", "bwrap", str(out))
    assert "Traceback" not in result.stderr, result.stderr
    assert list(victim.iterdir()) == []
    assert (out / "verify" / "a").is_dir() and not (out / "verify" / "a").is_symlink()
    assert (out / "verify" / "a" / "trajectory.json").is_file()


def test_a_huge_sparse_trajectory_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A terabyte costs nothing to make sparse; reading it would cost the reader its memory."""
    path = tmp_path / "trajectory.json"
    with open(path, "wb") as f:
        f.truncate(1 << 40)
    tracemalloc.start()
    try:
        with pytest.raises(UnsafeFileError, match=r"holds 1,048,576 MiB, more than a run's file may"):
            read_trajectory(str(path))
        with pytest.raises(UnsafeFileError):
            Trajectory.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_a_file_that_grows_while_read_is_cut_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, limit=100) == b"x" * 100
    with pytest.raises(UnsafeFileError, match="more than a run's file may"):
        read_regular(path, limit=99)


def test_appends_and_copies_never_go_through_links(tmp_path: Path) -> None:
    """``results.jsonl`` appended by a resumed run and ``verify.jsonl`` by a verification, and ``score --out``'s
    copy: a link in their place is refused or copied as a link, never written through or read into the copy."""
    victim = tmp_path / "shadow"
    victim.write_text(VICTIM_TEXT)
    out = _plain_run(tmp_path / "run")
    (out / "tasks" / "b" / "trajectory.json").unlink()
    (out / "tasks" / "b" / "trajectory.json").symlink_to(victim)
    scored = rescore(out, out=tmp_path / "copy")
    copied = tmp_path / "copy" / "tasks" / "b" / "trajectory.json"
    assert copied.is_symlink() and {r.task_id for r in scored.results} >= {"a"}
    assert VICTIM_TEXT not in (tmp_path / "copy" / "results.jsonl").read_text()
    (out / "results.jsonl").unlink()
    (out / "results.jsonl").symlink_to(victim)
    with pytest.raises(RunDirError, match="symbolic link"):
        RunDir(out).append_result(scored.results[0])
    assert victim.read_text() == VICTIM_TEXT


# -- the property: every reader, any file of the run a link, a FIFO, huge, a folder or garbage -----------------

_FILES = (
    "run.json",
    "results.jsonl",
    "summary.json",
    "tasks.jsonl",
    "verify.jsonl",
    ".lock",
    "tasks/a/trajectory.json",
)
_KINDS = ("plain", "absent", "link to victim", "link inside", "fifo", "huge", "directory", "garbage")


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """A reader that waits on a FIFO fails the test instead of hanging it."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"a reader was still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _refusal(read: Callable[[Path], object], out: Path) -> str | None:
    """What ``read`` said when it refused the run; None when it read it."""
    try:
        read(out)
    except RunDirError as e:
        return str(e)
    return None


def _make(out: Path, name: str, kind: str, victim: Path, garbage: bytes) -> None:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "plain":
        return
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "link to victim":
        path.symlink_to(victim)
    elif kind == "link inside":
        path.symlink_to(out / "tasks.jsonl" if name != "tasks.jsonl" else out / "run.json")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(MAX_RECORD_BYTES + 1)
    elif kind == "directory":
        path.mkdir()
    elif kind == "garbage":
        path.write_bytes(garbage)


_READERS: dict[str, Callable[[Path], object]] = {
    "results": lambda out: RunDir(out).read_results(),
    "manifest": lambda out: RunDir(out).read_manifest(),
    "summary": lambda out: RunDir(out).read_summary(),
    "tasks": lambda out: RunDir(out).read_tasks(),
    "verify rows": lambda out: read_rows(RunDir(out)),
    "analyze": analyze_run,
    "score in place": rescore,
    "view": build_view,
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.dictionaries(st.sampled_from(_FILES), st.sampled_from(_KINDS), max_size=4),
    garbage=st.binary(max_size=200),
)
def test_readers_of_a_run_directory_never_follow_links_block_or_read_huge_files(
    tmp_path_factory: pytest.TempPathFactory, layout: dict[str, str], garbage: bytes
) -> None:
    """Whatever file of the run is a link (to a victim or inside), a FIFO, a huge sparse file, a folder or
    garbage: every reader returns or raises ``RunDirError`` (a message, naming the file where it is the file's
    fault) within seconds, and the victim a link points to is never changed."""
    base = tmp_path_factory.mktemp("run")
    victim = base / "shadow"
    victim.write_text(VICTIM_TEXT)
    out = _plain_run(base / "run")
    for name, kind in sorted(layout.items(), key=lambda item: item[0] == "tasks.jsonl"):
        _make(out, name, kind, victim, garbage)
    for name, read in _READERS.items():
        with _deadline(20):
            problem = _refusal(read, out)
        assert problem is None or str(out) in problem, (name, problem)
        assert victim.read_text() == VICTIM_TEXT, (name, layout)
    assert not (out / ".lock").exists() or layout.get(".lock") not in (None, "plain"), "a lock left behind"

"""Built once: the build cache (kernel environments, task packages) and the package store's unpacked wheels share
one way of building in a folder beside the target and renaming it into place, with the marker folders built
before have."""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import stat
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from super_bench.sandbox.lifetime import build_cache
from super_bench.sandbox.lifetime.build_cache import build_into, build_once, is_built
from super_bench.sandbox.packages.store import PackageStore


def _builders_at_once(count: int, build: Callable[[int], Path]) -> list[Path | None]:
    barrier = threading.Barrier(count)
    results: list[Path | None] = [None] * count

    def one(i: int) -> None:
        barrier.wait()
        results[i] = build(i)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def beside(target: Path) -> list[str]:
    """What lies beside a build but its lock file."""
    return sorted(p.name for p in target.parent.iterdir() if p.name != f".{target.name}.lock")


def test_builders_at_once_see_one_whole_build_and_leave_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "kind" / "abc"
    built_by: list[int] = []
    fills: list[int] = []

    def build(i: int) -> Path:
        def fill(into: Path) -> None:
            fills.append(i)
            (into / "who").write_text(str(i))
            (into / "sub").mkdir()
            (into / "sub" / "data").write_text("x" * 1000)

        path = build_into(target, fill)
        built_by.append(int((path / "who").read_text()))
        return path

    results = _builders_at_once(6, build)
    assert results == [target] * 6 and len(set(built_by)) == 1  # every builder got the one that won
    assert len(fills) == 1  # the others waited for it instead of building the same at once
    assert beside(target) == ["abc"]  # no temporary folder left
    assert is_built(target) and (target / "sub" / "data").read_text() == "x" * 1000
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # readable by every user by default


def test_a_failed_build_leaves_nothing_and_the_next_one_builds(tmp_path: Path) -> None:
    target = tmp_path / "kind" / "abc"

    def fails(into: Path) -> None:
        (into / "half").write_text("half")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError, match="the build failed"):
        build_into(target, fails)
    assert beside(target) == []
    assert build_into(target, lambda into: (into / "whole").write_text("whole")) == target
    assert (target / "whole").is_file() and not (target / "half").exists()


def test_a_link_planted_as_the_lock_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "kind" / "abc"
    target.parent.mkdir()
    victim = tmp_path / "victim"
    (target.parent / ".abc.lock").symlink_to(victim)  # opened for the lock, it would make the file it names
    assert build_into(target, lambda into: (into / "whole").write_text("whole")) == target
    assert (target / "whole").is_file() and not victim.exists()


def test_a_lock_held_past_the_wait_is_taken_for_stuck_and_the_build_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder stopped rather than dead (or agent code that took the lock) keeps it: a builder waits a bounded
    time, then builds alone, the rename into place keeping the result whole."""
    monkeypatch.setattr(build_cache, "_BUILD_WAIT", 0.3)
    target = tmp_path / "kind" / "abc"
    target.parent.mkdir()
    holder = os.open(target.parent / ".abc.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert build_into(target, lambda into: (into / "whole").write_text("whole")) == target
        assert (target / "whole").is_file() and beside(target) == ["abc"]
    finally:
        os.close(holder)


def test_folders_built_before_are_found_by_their_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPER_BENCH_ENV_CACHE", str(tmp_path / "cache"))
    key = ["3.11", ["numpy"]]
    first = build_once("task-packages", key, lambda into: (into / "built").write_text("1"))
    # The marker has the name and content it always had: the key, as JSON.
    assert json.loads((first / ".complete").read_text()) == key
    assert build_once("task-packages", key, lambda into: pytest.fail("built twice")) == first
    # A folder an older version built (only the marker says it is done) is used as it is.
    old = tmp_path / "store" / "unpacked" / ("0" * 64)
    old.mkdir(parents=True)
    (old / ".complete").write_text("")
    assert PackageStore(tmp_path / "store").unpacked("0" * 64) == old


def test_a_wheel_is_unpacked_once_read_only_whoever_asks_at_once(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("pkg/__init__.py", "VALUE = 1\n")
        script = zipfile.ZipInfo("pkg/tool.sh")
        script.external_attr = 0o755 << 16
        wheel.writestr(script, "#!/bin/sh\n")
        wheel.writestr("pkg-1.0.dist-info/RECORD", "")
    data = buffer.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    store = PackageStore(tmp_path / "store")
    store.path(sha).parent.mkdir(parents=True, exist_ok=True)
    store.path(sha).write_bytes(data)

    results = _builders_at_once(4, lambda _: store.unpacked(sha))
    target = tmp_path / "store" / "unpacked" / sha
    assert results == [target] * 4 and beside(target) == [sha]
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        ".complete",
        "pkg",
        "pkg/__init__.py",
        "pkg/tool.sh",
    ]
    assert stat.S_IMODE((target / "pkg" / "__init__.py").stat().st_mode) == 0o444  # the store's, not the tree's
    assert stat.S_IMODE((target / "pkg" / "tool.sh").stat().st_mode) == 0o555
    assert stat.S_IMODE(target.stat().st_mode) == 0o755

"""The docker container's guard serves the harness (kernel starts, files, kills) over one connection, instead of an
engine command per operation (docs/threat-model.md, "Host files and privileges"): it takes that one connection,
from outside the container, and no other; what it answers is bounded; where it cannot serve, the engine does."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment
from super_bench.sandbox.backends.container_helper import GuardHelper, HelperGone

GUARD = Path(__file__).resolve().parents[2] / "src" / "super_bench" / "sandbox" / "in_task" / "container_guard.py"


class _EngineCommands:
    """The container engine's commands the harness starts while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[list[str]] = []
        original = subprocess.Popen.__init__

        def recording(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            if isinstance(args, list) and args and Path(str(args[0])).name in ("docker", "podman"):
                self.seen.append([str(a) for a in args])
            original(popen, args, *rest, **kwargs)

        monkeypatch.setattr(subprocess.Popen, "__init__", recording)


def _edit(env: Environment, path: str, old: str, new: str) -> Any:
    return env.step(Action(type="edit", content=f"{path}\n<<<BEFORE_EDIT>>>\n{old}\n<<<AFTER_EDIT>>>\n{new}"))


def test_files_edits_and_kernel_restarts_take_no_engine_command(
    env_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    env: Environment = env_factory(cell_timeout=30, sandbox=backend_settings("docker"))
    env.reset(make_task())
    commands = _EngineCommands(monkeypatch)
    env._sandbox.write_file("sub/new.py", b"a = 1\n")
    assert env._sandbox.read_file("/content/sub/new.py") == b"a = 1\n"
    assert _edit(env, "sub/new.py", "a = 1", "a = 2").outcome == "ok"
    env._kernel.restart()
    assert env.step(Action.execute("print(open('sub/new.py').read(), end='')")).observation == "a = 2\n"
    assert commands.seen == []


def test_agent_code_finds_no_guard_to_connect_to_and_cannot_stand_in_for_it(env_factory: Any) -> None:
    """The guard's socket is gone once the harness is connected; a server agent code binds in its place is never
    reached: the harness keeps the connection it made before any agent code ran."""
    env: Environment = env_factory(cell_timeout=30, sandbox=backend_settings("docker"))
    env.reset(make_task())
    impostor = (
        "import os, socket, threading\n"
        "print(os.path.exists('/run/super-bench/guard.sock'))\n"
        "accepted = []\n"
        "server = socket.socket(socket.AF_UNIX)\n"
        "server.bind('/run/super-bench/guard.sock')\n"
        "server.listen(8)\n"
        "threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()\n"
        "_ = open('/content/m.py', 'w').write('x = 1\\n')"
    )
    assert env.step(Action.execute(impostor)).observation == "False\n"
    assert _edit(env, "/content/m.py", "x = 1", "x = 2").outcome == "ok"
    env._kernel.restart()  # the next kernel too is started by the guard, not by what listens there now
    check = "import os\nprint(open('/content/m.py').read(), end='')\nprint(os.getppid())"
    assert env.step(Action.execute(check)).observation == "x = 2\n1\n"


def test_without_the_guard_the_engine_does_the_same(env_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that broke (or never was) leaves the sandbox working as before: an engine command each."""
    env: Environment = env_factory(cell_timeout=30, sandbox=backend_settings("docker"))
    env.reset(make_task())
    helper = env._sandbox._helper  # type: ignore[attr-defined]
    assert helper is not None and helper.alive
    helper.close()
    commands = _EngineCommands(monkeypatch)
    env._sandbox.write_file("w.py", b"b = 1\n")
    assert env._sandbox.read_file("w.py") == b"b = 1\n"
    assert _edit(env, "w.py", "b = 1", "b = 3").outcome == "ok"
    env._kernel.restart()
    assert env.step(Action.execute("print(open('w.py').read(), end='')")).observation == "b = 3\n"
    assert any("exec" in args for args in commands.seen), commands.seen
    assert any("cp" in args for args in commands.seen), commands.seen


# -- the guard itself, run on the host ------------------------------------------------------------------------
@pytest.fixture
def guard(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    path = tmp_path / "g.sock"
    proc = subprocess.Popen([sys.executable, "-S", str(GUARD), "infinity", "--serve", str(path)])
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc, path
    proc.terminate()
    proc.wait(30)


def test_the_guard_turns_away_a_peer_whose_process_it_can_see(guard: tuple[subprocess.Popen[bytes], Path]) -> None:
    """Agent code, in the guard's own PID namespace, is not the harness: its connection is closed unanswered,
    and the guard goes on (and keeps listening for the harness)."""
    proc, path = guard
    peer = socket.socket(socket.AF_UNIX)
    peer.settimeout(30)
    peer.connect(str(path))
    body = b'{"op": "read", "path": "/etc/hostname", "limit": 100}'
    try:
        peer.sendall(struct.pack(">I", len(body)) + body)
        answered = peer.recv(4)
    except ConnectionError:
        answered = b""  # reset: closed unanswered too
    assert answered == b""
    assert proc.poll() is None
    assert path.exists()


def test_a_held_guard_counts_its_lifetime_from_its_arming() -> None:
    """Started ahead of its task, the guard waits for the task's start before its lifetime counts down."""
    proc = subprocess.Popen([sys.executable, "-S", str(GUARD), "0.5", "--held"])
    try:
        time.sleep(2)
        assert proc.poll() is None, "a held guard ended before it was armed"
        proc.send_signal(signal.SIGUSR1)
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()


# -- the harness's end: every reply bounded -----------------------------------------------------------------
def _answering(reply: bytes) -> tuple[GuardHelper, socket.socket]:
    ours, theirs = socket.socketpair()
    ours.settimeout(5)

    def answer() -> None:
        try:
            head = theirs.recv(4)
            theirs.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
            theirs.sendall(reply)
        finally:
            theirs.shutdown(socket.SHUT_WR)

    threading.Thread(target=answer, daemon=True).start()
    return GuardHelper(ours, os.getpid()), theirs


def _framed(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack(">I", len(header)) + header + data


def test_a_reply_past_what_was_asked_is_refused_unread() -> None:
    helper, _ = _answering(_framed(b'{"size": 1000000000}', b"x" * 4096))
    with pytest.raises(HelperGone):
        helper.read("/content/f", 10)
    assert not helper.alive  # the connection is dropped: the sandbox falls back to the engine


def test_a_header_past_its_bound_is_refused_unread() -> None:
    helper, _ = _answering(struct.pack(">I", 1 << 30) + b"{" * 4096)
    with pytest.raises(HelperGone):
        helper.read("/content/f", 10)


def test_an_error_the_guard_reports_is_the_callers_oserror() -> None:
    helper, _ = _answering(_framed(b'{"errno": 2, "error": "No such file or directory"}'))
    with pytest.raises(FileNotFoundError):
        helper.read("/content/missing", 10)
    assert helper.alive


@settings(max_examples=150, deadline=None)
@given(reply=st.binary(max_size=200), limit=st.integers(0, 64))
def test_any_reply_is_data_within_the_limit_or_a_clear_failure(reply: bytes, limit: int) -> None:
    helper, _ = _answering(reply)
    try:
        data = helper.read("/content/f", limit)
    except (HelperGone, OSError):
        return
    assert len(data) <= limit


def test_describing_an_image_again_starts_no_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a task's Python in the image is was measured once and noted by the image's id."""
    from super_bench.sandbox import SandboxConfig
    from super_bench.sandbox.backends.docker import DockerSandbox

    config = SandboxConfig(**backend_settings("docker"))
    first = DockerSandbox.describe(config)
    commands = _EngineCommands(monkeypatch)
    again = DockerSandbox.describe(config)
    assert again.task_environment == first.task_environment
    assert not any("run" in args for args in commands.seen), commands.seen


def test_a_container_started_ahead_holds_its_guards_count_until_its_task_starts(tmp_path: Path) -> None:
    from super_bench.sandbox import SandboxConfig, create_sandbox

    sandbox = create_sandbox(SandboxConfig(**backend_settings("docker"), root=tmp_path, wall_time_limit=600))
    sandbox.hold_clock()
    sandbox.start()
    try:
        command = Path(f"/proc/{sandbox._main_pid}/cmdline").read_bytes().split(b"\0")  # type: ignore[attr-defined]
        assert b"--held" in command
        sandbox.start_clock()
        assert sandbox.wall_time_left is not None and sandbox.wall_time_left > 500
        sandbox.write_file("x.txt", b"started")
        assert sandbox.read_file("x.txt") == b"started"
    finally:
        sandbox.stop()

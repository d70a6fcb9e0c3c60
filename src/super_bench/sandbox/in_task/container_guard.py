"""Run as the first process (PID 1) of a docker task's container: its lifetime guard, and the harness's helper.

The kernel delivers to a PID namespace's first process only the signals it has a handler for, when they come
from inside the namespace: agent code, root in the container, can neither stop (SIGSTOP) nor kill this process.
At the end of the lifetime given (seconds, or ``infinity``) it exits, and the container ends with everything in
it, should the harness and its watchdog both be gone by then. Meanwhile it reaps the orphans agent code leaves.
A SIGTERM (the engine's stop) ends it at once. With ``--held``, the lifetime is counted from the first SIGUSR1
(the harness's, when the task's clock starts: a container started ahead waits for its task); later ones change
nothing, so agent code cannot put its end off.

With ``--serve PATH``, it listens on the unix socket PATH for one connection, from outside the container (the
harness: a peer whose process this namespace cannot see), then closes and removes the socket, so that nothing
in the container can connect after it. Over that connection it does what the harness would otherwise start a
``docker exec`` or ``docker cp`` for, each a process of the engine's: start a kernel (its log pipe passed
along), tell whether a process it started has ended, signal a process group or every process but itself, and
read or write a file, and end the container (its own exit: as PID 1, every process of the
container goes with it). It does these as agent code could (the same user, in the container's own root), so it
gives agent code nothing it lacks. Messages are a 4-byte length and a JSON header, then the bytes the header
counts.

Further arguments: a script to start beside it (the package cache's forwarder) and that script's arguments.
Standalone: the standard library only (any Python 3 an image may have), run with ``python3 -S``.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import time
from typing import Any

HEADER_MAX = 1 << 16
IO_TIMEOUT = 120.0
_started: dict[int, int | None] = {}  # pid -> exit code, or None while it runs (what it started for the harness)
_armed: list[float] = []  # the monotonic time of the first SIGUSR1, with --held


def _reap() -> None:
    try:
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid <= 0:
                return
            if pid in _started:  # as subprocess reports it: -N for a signal
                _started[pid] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    except ChildProcessError:
        pass


def _exact(conn: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = conn.recv(min(count - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the harness closed the connection")
        data += chunk
    return bytes(data)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], bytes, list[int]]:
    """One request: its header, payload and any descriptors passed with its first bytes."""
    fds = array.array("i")
    head, ancillary, _, _ = conn.recvmsg(4, socket.CMSG_LEN(4 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if not head:
        raise EOFError("the harness closed the connection")
    head += _exact(conn, 4 - len(head))
    size = struct.unpack(">I", head)[0]
    if size > HEADER_MAX:
        raise ValueError("header too large")
    header = json.loads(_exact(conn, size))
    payload = _exact(conn, int(header.get("size", 0)))
    return header, payload, list(fds)


def _send(conn: socket.socket, header: dict[str, Any], payload: bytes = b"") -> None:
    data = json.dumps(header).encode()
    conn.sendall(struct.pack(">I", len(data)) + data)
    if payload:
        conn.sendall(payload)


def _open_regular(path: str, flags: int, mode: int = 0o666) -> int:
    """A descriptor of the regular file at ``path``; a FIFO or device is refused without waiting on it."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(header: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    path, limit = header["path"], header.get("limit")
    fd = _open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            return {"too_large": size}, b""
        data = f.read(size if limit is None else limit + 1)
    if limit is not None and len(data) > limit:
        return {"too_large": len(data)}, b""
    return {"size": len(data)}, data


def _write(header: dict[str, Any], payload: bytes) -> dict[str, Any]:
    path = header["path"]
    if header.get("parents"):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        fd = _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except PermissionError:
        # A file agent code may not write in place it may replace (it owns the directory): so does the edit.
        mode = os.stat(path).st_mode & 0o7777
        staged = f"{path}.super-bench-{os.getpid()}"
        fd = _open_regular(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(staged, mode)
        os.replace(staged, path)
        return {}
    with os.fdopen(fd, "wb") as f:
        f.write(payload)
    return {}


def _spawn(header: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    """Start ``argv`` in a process group of its own, its output into the descriptor passed, stdin empty."""
    pid = os.fork()
    if pid == 0:  # the child: nothing here may return into the guard's loop
        try:
            os.setpgid(0, 0)
            if header.get("umask") is not None:
                os.umask(int(header["umask"]))
            os.chdir(header.get("cwd") or "/")
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            out = fds[0] if fds else null
            os.dup2(out, 1)
            os.dup2(out, 2)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGUSR1, signal.SIG_DFL)
            os.execvp(header["argv"][0], header["argv"])
        finally:
            os._exit(127)
    _started[pid] = None
    return {"pid": pid}


def _arm(*_: object) -> None:
    if not _armed:
        _armed.append(time.monotonic())


def _handle(header: dict[str, Any], payload: bytes, fds: list[int]) -> tuple[dict[str, Any], bytes]:
    op = header.get("op")
    _reap()
    if op == "spawn":
        return _spawn(header, fds), b""
    if op == "arm":  # the task's clock starts: the lifetime is counted from now (once)
        _arm()
        return {}, b""
    if op == "poll":
        pid = int(header["pid"])
        return {"running": _started.get(pid, 0) is None, "status": _started.get(pid)}, b""
    if op == "signal":  # a process group, or with pid -1 every process but this one
        pid, sig = int(header["pid"]), int(header.get("signal", signal.SIGKILL))
        if pid == -1:
            os.kill(-1, sig)
        elif pid > 1:
            os.killpg(pid, sig)
        return {}, b""
    if op == "exit":  # the task ends: the container with it (the engine removes it, started with --rm)
        return {}, b""
    if op == "read":
        return _read(header)
    if op == "write":
        return _write(header, payload), b""
    raise ValueError(f"unknown request {op!r}")


def _serve_one(conn: socket.socket) -> None:
    header, payload, fds = _receive(conn)
    try:
        try:
            reply, data = _handle(header, payload, fds)
        except OSError as e:
            reply, data = {"errno": e.errno or 0, "error": str(e)}, b""
        except (KeyError, TypeError, ValueError) as e:
            reply, data = {"errno": 0, "error": f"bad request: {e}"}, b""
    finally:
        for fd in fds:
            os.close(fd)
    _send(conn, reply, data)
    if header.get("op") == "exit":
        sys.exit(0)


def _listen(path: str) -> socket.socket:
    """Listening at ``path`` by the time the path is there (bound and listening under another name first)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staged = f"{path}.{os.getpid()}"
    listener.bind(staged)
    os.chmod(staged, 0o666)  # a harness that is not the container's root connects too
    listener.listen(4)
    os.rename(staged, path)
    return listener


def _accept(listener: socket.socket) -> socket.socket | None:
    """The harness's connection, or None: a peer inside the container (its process seen here) is turned away."""
    conn, _ = listener.accept()
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    if struct.unpack("3i", creds)[0] != 0:
        conn.close()
        return None
    conn.settimeout(IO_TIMEOUT)
    return conn


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    lifetime = None if sys.argv[1] == "infinity" else float(sys.argv[1])
    args = sys.argv[2:]
    held = args[:1] == ["--held"]
    if held:
        args = args[1:]
        signal.signal(signal.SIGUSR1, _arm)
    listener = conn = None
    path = ""
    if args[:1] == ["--serve"]:
        path, args = args[1], args[2:]
        try:
            listener = _listen(path)
        except OSError:
            pass  # the harness then uses the engine's commands
    if args:
        os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", *args], dict(os.environ))
    began = time.monotonic()
    while True:
        start = (_armed[0] if _armed else None) if held else began
        left = None if lifetime is None or start is None else start + lifetime - time.monotonic()
        if left is not None and left <= 0:
            return
        _reap()
        wait = 0.5 if left is None else min(0.5, left)
        watched = [s for s in (listener, conn) if s is not None]
        if not watched:
            time.sleep(wait)
            continue
        try:
            ready = select.select(watched, [], [], wait)[0]
        except OSError:
            continue
        for sock in ready:
            try:
                if sock is listener and listener is not None:
                    conn = _accept(listener)
                    if conn is not None:
                        listener.close()
                        listener = None
                        os.unlink(path)
                elif conn is not None:
                    _serve_one(conn)
            except Exception:  # a broken connection ends the service, never the guard
                if sock is conn and conn is not None:
                    conn.close()
                    conn = None


if __name__ == "__main__":
    main()

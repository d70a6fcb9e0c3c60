"""The harness's end of the connection to a docker task's lifetime guard (``in_task/container_guard.py``), which
starts kernels, reads and writes files and sends signals in the container without an engine command for each:
a ``docker exec`` or ``docker cp`` costs a process of the engine's, about a fifth of a second of CPU and wall
time; a request here, a round trip on a unix socket.

The guard listens on a socket in the kernels' sockets folder, which agent code can write; the harness connects
once, before any agent code has run, and only to a container's first process: the socket is opened without
following links and checked to be one (as the kernels' are), and the peer's process, which the kernel names,
must be the first of a PID namespace of its own; its host id is then the container's main process's (no
``inspect`` needed). The guard takes no other connection, and none from inside the container.

What comes back is still from inside the container, whose root could tamper with the guard's process: every
reply is bounded (its header to 64 KiB, its data to what was asked for) and timed (``TIMEOUT``), and a
connection that breaks either bound is closed; the sandbox then does what it did before the guard served, with
an engine command per operation.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Any

from super_bench.sandbox.base import FileTooLargeError

SOCKET_NAME = "guard.sock"
# Seconds one request may take (a slow file, a busy container), as the engine's copy had.
TIMEOUT = 120.0
_HEADER_MAX = 1 << 16


class HelperGone(Exception):
    """The connection is closed or broke a bound: the caller falls back to the engine."""


class HelperBusy(Exception):
    """Another request is under way (``wait=False``)."""


def _first_of_its_namespace(pid: int) -> bool:
    """Whether the host process ``pid`` is the first process (1) of a PID namespace other than the harness's."""
    if pid <= 0:
        return False
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        ids = next((line.split()[1:] for line in f if line.startswith("NSpid:")), [])
    return len(ids) > 1 and ids[-1] == "1"


class GuardHelper:
    """One connection to a container's guard. Thread-safe: one request at a time."""

    def __init__(self, conn: socket.socket, peer: int) -> None:
        self._conn: socket.socket | None = conn
        self._lock = threading.Lock()
        self.peer = peer  # the guard's process, by its host id

    @classmethod
    def connect(cls, sockets: Path, timeout: float) -> GuardHelper | None:
        """Connect to the guard's socket in the folder ``sockets`` (the host's side of the kernels' sockets
        folder), waiting up to ``timeout`` for it to appear; None where it does not, or where what answers is not
        the first process of a PID namespace of its own (a container's main process)."""
        deadline = time.monotonic() + timeout
        try:
            folder = os.open(sockets, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            while True:
                try:
                    fd = os.open(SOCKET_NAME, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                    break
                except FileNotFoundError:
                    if time.monotonic() > deadline:
                        return None
                    time.sleep(0.005)
                except OSError:
                    return None
        finally:
            os.close(folder)
        return cls._connect_to(fd, deadline)

    @classmethod
    def _connect_to(cls, fd: int, deadline: float) -> GuardHelper | None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise OSError("not a socket")
            conn.settimeout(max(1.0, deadline - time.monotonic()))
            conn.connect(f"/proc/self/fd/{fd}")
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            peer = struct.unpack("3i", creds)[0]
            if not _first_of_its_namespace(peer):
                raise OSError("the socket is not a container's first process's")
        except OSError:
            conn.close()
            return None
        finally:
            os.close(fd)
        conn.settimeout(TIMEOUT)
        return cls(conn, peer)

    @property
    def alive(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def request(
        self,
        header: dict[str, Any],
        payload: bytes = b"",
        *,
        fds: tuple[int, ...] = (),
        data_limit: int | None = 0,
        wait: bool = True,
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request; its reply's header and data (at most ``data_limit`` bytes; None: any). ``wait=False``:
        raise ``HelperGone`` at once where another request is under way. ``OSError`` where the guard says the
        request failed (``FileNotFoundError``, ``PermissionError`` as the errno says)."""
        if not self._lock.acquire(blocking=wait):
            raise HelperBusy("another request is under way")
        try:
            conn = self._conn
            if conn is None:
                raise HelperGone("closed")
            try:
                body = json.dumps({**header, "size": len(payload)}).encode()
                message = struct.pack(">I", len(body)) + body
                if fds:
                    conn.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
                else:
                    conn.sendall(message)
                if payload:
                    conn.sendall(payload)
                size = struct.unpack(">I", self._exact(conn, 4))[0]
                if size > _HEADER_MAX:
                    raise HelperGone(f"a reply header of {size} bytes")
                reply = json.loads(self._exact(conn, size))
                if not isinstance(reply, dict):
                    raise HelperGone("a reply that is not an object")
                count = int(reply.get("size", 0)) if "errno" not in reply else 0
                if count < 0 or (data_limit is not None and count > data_limit):
                    raise HelperGone(f"a reply of {count} bytes, past the {data_limit} asked for")
                data = self._exact(conn, count)
            except (OSError, ValueError, TypeError, struct.error) as e:
                self.close()
                raise HelperGone(str(e)) from e
            except HelperGone:
                self.close()
                raise
        finally:
            self._lock.release()
        if "errno" in reply:
            number = int(reply["errno"]) if isinstance(reply["errno"], int) else 0
            raise OSError(number, str(reply.get("error", "")))
        return reply, data

    @staticmethod
    def _exact(conn: socket.socket, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = conn.recv(min(count - len(data), 1 << 20))
            if not chunk:
                raise HelperGone("the guard closed the connection")
            data += chunk
        return bytes(data)

    # -- what the sandbox asks ---------------------------------------------------------------------
    def read(self, path: str, limit: int | None) -> bytes:
        """The regular file ``path`` (absolute, in the container); ``FileTooLargeError`` past ``limit``."""
        reply, data = self.request({"op": "read", "path": path, "limit": limit}, data_limit=limit)
        if "too_large" in reply:
            raise FileTooLargeError(path, int(reply["too_large"]), limit or 0)
        return data

    def write(self, path: str, data: bytes, *, parents: bool) -> None:
        self.request({"op": "write", "path": path, "parents": parents}, data)

    def spawn(self, argv: list[str], cwd: str, umask: int | None, output: int) -> int:
        """Start ``argv`` in a process group of its own, its output into the pipe ``output``; its id inside."""
        reply, _ = self.request({"op": "spawn", "argv": argv, "cwd": cwd, "umask": umask}, fds=(output,))
        pid = reply.get("pid")
        if not isinstance(pid, int) or pid <= 1:
            self.close()
            raise HelperGone(f"the guard answered a start with {pid!r}")
        return pid

    def poll(self, pid: int) -> tuple[bool, int | None]:
        """Whether what ``spawn`` started as ``pid`` still runs, and its exit status once it has ended."""
        try:
            reply, _ = self.request({"op": "poll", "pid": pid}, wait=False)
        except HelperBusy:
            return True, None  # asked again at the next look
        status = reply.get("status")
        return bool(reply.get("running")), status if isinstance(status, int) else None

    def kill(self, group: int) -> None:
        """SIGKILL the process group ``group`` (-1: every process of the container but its first)."""
        self.request({"op": "signal", "pid": group, "signal": 9})

    def end_container(self, timeout: float = 10.0) -> bool:
        """Have the guard exit, and with it (the container's first process) every process of the container; the
        engine then removes the container (``--rm``). Whether the guard's end was seen (its connection closed)."""
        try:
            self.request({"op": "exit"})
        except (HelperGone, OSError):
            return False
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is None:
            return False
        try:
            conn.settimeout(timeout)
            return conn.recv(1) == b""
        except OSError:
            return False
        finally:
            conn.close()

    def arm(self) -> None:
        """Start the guard's count of the container's lifetime (a container started ahead: its task begins)."""
        self.request({"op": "arm"})

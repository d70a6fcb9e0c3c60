"""The package proxy's sockets, charged to the task that uses them (docs/threat-model.md, "Accounting").

Each task gets listeners of its own: a loopback port, and, for a sandbox without the host's loopback, a unix
socket in a directory of its own. So every connection belongs to a task from the moment it is accepted, and:

- a task has at most ``MAX_CONNECTIONS`` open at once (pip opens one or two), so a task holds at most that
  many of the harness's threads and descriptors, whatever it opens. One more takes the place of the open
  connection idle the longest (not in the middle of a request), which is closed; where every one is busy,
  the new one is closed. So connections that only sit open (anyone on the machine can open some to a task's
  loopback port) never keep a task's own pip out;
- a connection that sends nothing for ``IDLE_SECONDS`` (a request's bytes, or reading an answer) is closed;
- when the task ends, its listeners and every connection it still has are closed, and their threads end.

One thread accepts for every task (``selectors``); each accepted connection has a thread that serves its
requests with the proxy's handler. Idle connections beyond the cap cost nothing but the kernel's backlog.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.scratch import short_temp_base

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 16
IDLE_SECONDS = 60.0


@dataclass
class _Listener:
    """What a connection's handler is given as its server: which task accepted it, and where it says when a
    request begins and ends (``TrackedHandler``)."""

    token: str
    sock: socket.socket
    hub: ConnectionHub

    def busy(self, conn: socket.socket, busy: bool) -> None:
        self.hub.mark(self.token, conn, busy)


@dataclass
class _Connection:
    busy: bool = False
    idle_since: float = field(default_factory=time.monotonic)


class TrackedHandler(BaseHTTPRequestHandler):
    """A handler that tells its listener when each request begins (its request line and headers read whole)
    and ends, so that a connection in the middle of one is never the one closed to make room. One still
    sending its headers, however slowly, may be: a request a task's pip sends comes at once."""

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self._mark(parsed)
        return parsed

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:
            self._mark(False)

    def _mark(self, busy: bool) -> None:
        if isinstance(self.server, _Listener):
            self.server.busy(self.connection, busy)


@dataclass
class _TaskSockets:
    token: str
    listeners: list[_Listener] = field(default_factory=list)
    connections: dict[socket.socket, _Connection] = field(default_factory=dict)
    unix_dir: Path | None = None
    refused: int = 0  # connections closed over the cap, logged once


class ConnectionHub:
    """The listeners and connections of every task of one proxy; ``handler`` serves a connection's requests
    (its ``server`` is the listener's ``_Listener``: ``server.token`` is the task's)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, cap: int = MAX_CONNECTIONS) -> None:
        self._handler = handler
        self._cap = cap
        self._lock = threading.Lock()
        self._tasks: dict[str, _TaskSockets] = {}
        self._selector = selectors.DefaultSelector()
        # The accept thread waits on the selector; a byte here wakes it to take up or drop a listener.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        threading.Thread(target=self._accept_loop, name="super-bench-package-accept", daemon=True).start()

    def open_task(self, token: str) -> int:
        """A loopback listener for the task ``token``; returns its port."""
        sock = socket.create_server(("127.0.0.1", 0), backlog=self._cap)
        self._add(token, sock)
        return int(sock.getsockname()[1])

    def unix_socket(self, token: str) -> Path:
        """The task's unix socket, made on first use in a directory that holds it alone (bound read-only into a
        container, so agent code can neither replace it nor plant a file beside it)."""
        with self._lock:
            task = self._tasks[token]
            if task.unix_dir is not None:
                return task.unix_dir / "proxy.sock"
            directory = Path(tempfile.mkdtemp(prefix="sbp-", dir=short_temp_base()))
            task.unix_dir = directory
        supervisor.register("dir", str(directory))  # removed with the harness if it dies first
        directory.chmod(0o755)
        path = directory / "proxy.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        path.chmod(0o666)  # whoever a container's root is on the host; the token guards the task's address
        sock.listen(self._cap)
        self._add(token, sock)
        return path

    def close_task(self, token: str) -> None:
        """The task ended: its listeners and connections are closed (their threads end), its socket removed."""
        with self._lock:
            task = self._tasks.pop(token, None)
        if task is None:
            return
        for listener in task.listeners:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(listener.sock)
            listener.sock.close()
        self._wake()
        for conn in list(task.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)  # the handler's thread sees the end and returns
        if task.unix_dir is not None:
            with contextlib.suppress(OSError):
                os.unlink(task.unix_dir / "proxy.sock")
                os.rmdir(task.unix_dir)
            supervisor.unregister("dir", str(task.unix_dir))

    def mark(self, token: str, conn: socket.socket, busy: bool) -> None:
        with self._lock:
            task = self._tasks.get(token)
            state = task.connections.get(conn) if task is not None else None
            if state is not None:
                state.busy, state.idle_since = busy, time.monotonic()

    def open_connections(self, token: str) -> int:
        with self._lock:
            task = self._tasks.get(token)
            return len(task.connections) if task is not None else 0

    def _add(self, token: str, sock: socket.socket) -> None:
        sock.setblocking(False)
        listener = _Listener(token, sock, self)
        with self._lock:
            self._tasks.setdefault(token, _TaskSockets(token)).listeners.append(listener)
        self._selector.register(sock, selectors.EVENT_READ, listener)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _accept_loop(self) -> None:
        while True:
            for key, _ in self._selector.select():
                listener = key.data
                if listener is None:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                    continue
                try:
                    conn, address = listener.sock.accept()
                except OSError:  # closed by close_task meanwhile, or the client gave up
                    continue
                self._take(listener, conn, address)

    def _take(self, listener: _Listener, conn: socket.socket, address: object) -> None:
        evicted: socket.socket | None = None
        with self._lock:
            task = self._tasks.get(listener.token)
            taken = task is not None
            if task is not None and len(task.connections) >= self._cap:
                task.refused += 1
                idle = [(state.idle_since, c) for c, state in task.connections.items() if not state.busy]
                if idle:
                    evicted = min(idle, key=lambda item: item[0])[1]
                    del task.connections[evicted]  # its thread ends as it finds the connection shut
                else:
                    taken = False
            if task is not None and taken:
                task.connections[conn] = _Connection()
            warn = task is not None and task.refused == 1
        if evicted is not None:
            with contextlib.suppress(OSError):
                evicted.shutdown(socket.SHUT_RDWR)
        if warn:
            log.warning("package cache: a task opened more than %d connections; the idle ones are closed", self._cap)
        if not taken:
            conn.close()
            return
        conn.setblocking(True)
        conn.settimeout(IDLE_SECONDS)
        name = "super-bench-package-connection"
        threading.Thread(target=self._serve, args=(listener, conn, address), name=name, daemon=True).start()

    def _serve(self, listener: _Listener, conn: socket.socket, address: object) -> None:
        try:
            self._handler(conn, address if isinstance(address, tuple) else ("", 0), listener)  # type: ignore[arg-type]
        except OSError:
            pass  # the client went away, or the task ended and its connection was shut
        except Exception:
            log.exception("package cache: a connection's handler failed")
        finally:
            with self._lock:
                task = self._tasks.get(listener.token)
                if task is not None:
                    task.connections.pop(conn, None)
            conn.close()

"""Nothing a sandbox starts outlives the harness, and nothing dies with the thread that started it.

- ``spawn`` starts long-lived sandbox processes (kernels, containers) from one thread that lives
  as long as the harness process. A parent-death signal (bubblewrap's ``--die-with-parent``) is
  tied to the thread that forked the child, so a kernel started from a worker thread (a server's,
  Inspect's, Ray's) would otherwise be killed when that thread retires, minutes later.
- the watchdog: a small process of its own session, started on first use, reading a pipe whose
  only writer is the harness. Sandboxes register what they create (process groups, marker
  values, cgroups, containers, task file systems, directories) and unregister it when they stop. When the harness
  dies, however it dies (SIGKILL included), the pipe closes, and the watchdog kills and removes
  whatever is still registered. When the harness exits as it should, the pipe is closed and the watchdog
  waited for (``close``): a command that has returned has nothing of its own still running.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from typing import Any, Literal

Kind = Literal["pgid", "marker", "cgroup", "container", "mount", "dir"]


class _Spawner:
    def __init__(self) -> None:
        self._requests: queue.Queue[tuple[Future[subprocess.Popen[bytes]], list[str], dict[str, Any]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def spawn(self, argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
        if threading.current_thread() is self._thread:
            return subprocess.Popen(argv, **options)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="super-bench-spawner", daemon=True)
                self._thread.start()
        future: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((future, argv, options))
        return future.result()

    def _serve(self) -> None:
        while True:
            future, argv, options = self._requests.get()
            try:
                future.set_result(subprocess.Popen(argv, **options))
            except BaseException as e:  # handed to the caller, whatever it is
                future.set_exception(e)


_spawner = _Spawner()


def _forked() -> None:
    """In a child forked from the harness (a process pool's worker), its own spawner and watchdog: the
    parent's threads do not exist there, so the inherited spawner would wait forever for one of them, and
    locks held at the fork would never be released."""
    global _spawner, _watchdog
    _spawner = _Spawner()
    _watchdog = _Watchdog()


def spawn(argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)``, forked by the harness's long-lived spawner thread."""
    return _spawner.spawn(argv, **options)


class _Watchdog:
    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def send(self, op: str, kind: Kind, value: Any) -> None:
        line = (json.dumps({"op": op, "kind": kind, "value": value}) + "\n").encode()
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(line)
                self._process.stdin.flush()
            except OSError:
                self._process = None  # it died: the next registration starts another

    def close(self, timeout: float) -> None:
        """End the watchdog: close its pipe, so that it removes what is still registered and exits, and wait for
        it up to ``timeout`` seconds (past that it goes on alone, as it would if the harness were killed)."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass

    @staticmethod
    def _start() -> subprocess.Popen[bytes]:
        # Its own session: a Ctrl-C or a signal to the harness's process group must not reach it first.
        return subprocess.Popen(
            watchdog_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


_watchdog = _Watchdog()
os.register_at_fork(after_in_child=_forked)  # (once both classes exist)
# What the watchdog may still have to remove at a normal exit (a proxy's folder, a task a stop left) takes it
# well under a second; a cgroup's or a container's end can take longer, and is left to it past this.
_EXIT_WAIT = 10.0


@atexit.register
def close() -> None:
    """Close the watchdog and wait for it (at this process's normal exit; a later registration starts another)."""
    _watchdog.close(_EXIT_WAIT)


def watchdog_command() -> list[str]:
    """The watchdog's command line: a Python without ``site`` that loads the two standard-library-only
    modules it needs from their files, so that it starts in milliseconds (importing them as
    ``super_bench.sandbox....`` would run the packages' ``__init__`` and import much of the harness). They are
    loaded by ``importlib.machinery``'s loader, with their byte code cached as for any import: ``importlib.util``
    imports ``contextlib`` and more, a fifth of the watchdog's start-up CPU."""
    from super_bench.sandbox.lifetime import reaper, watchdog

    load = (
        "import sys\n"
        "from importlib.machinery import SourceFileLoader\n"
        "def load(name, path):\n"
        "    module = sys.modules[name] = type(sys)(name)\n"
        "    module.__file__ = path\n"
        "    SourceFileLoader(name, path).exec_module(module)\n"
        "    return module\n"
        f"load({reaper.__name__!r}, {reaper.__file__!r})\n"
        f"load('watchdog', {watchdog.__file__!r}).main()\n"
    )
    return [sys.executable, "-I", "-S", "-c", load]


def register(kind: Kind, value: Any) -> None:
    """Have the watchdog kill or remove this if the harness dies before ``unregister``."""
    _watchdog.send("add", kind, value)


def unregister(kind: Kind, value: Any) -> None:
    _watchdog.send("remove", kind, value)

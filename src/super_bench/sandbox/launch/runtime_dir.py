"""The files a sandbox's kernels need, laid out so that agent code cannot turn them against the harness.

A runtime directory has two parts:

- ``private/``: links to the kernel's sockets. No sandbox shows it to agent code.
- ``sockets/``: where the kernel reads its connection file and binds its unix sockets. For an isolating
  sandbox it lies in the task's own directory (``sockets_in``), so that whatever agent code writes there
  counts against the task's disk limit like any file of its own; otherwise beside ``private/``. Agent code
  (the kernel runs it) can write here, so the harness never opens anything in it by path: files
  are created through a directory descriptor without following links, and each socket is opened
  as an ``O_PATH`` descriptor without following links, checked to be a socket, and reached through
  ``/proc/self/fd``. A link planted in its place leads nowhere, and a socket swapped in later is
  not the one the harness holds.

What a kernel writes to its own standard output and error (``os.write(1, ...)``, a library's prints)
is no file at all: it goes into a pipe that a thread of the harness drains, keeping only its last
``LOG_KEPT`` bytes. A flood there fills nothing (no disk of the host, none of the task's), and costs
the harness no more memory than that tail.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from super_bench.errors import KernelError
from super_bench.sandbox.lifetime.scratch import short_temp_base

CHANNELS = ("shell", "iopub", "stdin", "control", "hb")
# The end of the kernels' own output that is kept, for the note when a kernel dies.
LOG_KEPT = 64 << 10


@dataclass
class KernelFiles:
    """One kernel's connection: what the kernel reads, and the harness's own view of its sockets."""

    name: str
    kernel_info: dict[str, Any]
    connection_file: str  # the kernel's connection file, as the kernel sees it
    log_fd: int
    socket_fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.socket_fds:
            os.close(fd)
        self.socket_fds.clear()
        self.release_log()

    def release_log(self) -> None:
        """Close the harness's copy of the log pipe's writing end (once the kernel holds its own)."""
        if self.log_fd >= 0:
            try:
                os.close(self.log_fd)
            except OSError:
                pass
            self.log_fd = -1


class _LogTail:
    """The last ``LOG_KEPT`` bytes written into any of the pipes it drains."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tail = bytearray()

    def pipe(self) -> int:
        """A new pipe drained into the tail by a thread of its own, which ends with the last writer; its
        writing end is returned."""
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        threading.Thread(target=self._drain, args=(read_fd,), name="super-bench-kernel-log", daemon=True).start()
        return write_fd

    def _drain(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                with self._lock:
                    self._tail += chunk
                    del self._tail[:-LOG_KEPT]
        except OSError:
            pass
        finally:
            os.close(fd)

    def last(self, count: int) -> bytes:
        with self._lock:
            return bytes(self._tail[-count:]) if count > 0 else b""


class KernelRuntime:
    """The runtime directory of one sandbox (see the module's docstring)."""

    def __init__(self, root: Path, *, socket_owner: int | None = None, sockets_in: Path | None = None) -> None:
        self.root = root
        self.private = root / "private"
        self.sockets = (sockets_in or root) / "sockets"
        self.private.mkdir(mode=0o700)
        self.sockets.mkdir(mode=0o700)
        if socket_owner is not None:
            os.chown(self.sockets, socket_owner, socket_owner)
        self._owner = socket_owner
        self._sockets_fd = os.open(self.sockets, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._private_fd = os.open(self.private, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._log = _LogTail()  # one tail for every kernel of the sandbox
        self._count = 0

    @classmethod
    def create(cls, tag: str, *, socket_owner: int | None = None, sockets_in: Path | None = None) -> KernelRuntime:
        """A new runtime directory, ``sbk-<tag>-*`` under a short path; its ``sockets/`` in ``sockets_in`` (the
        task's directory) where given."""
        root = Path(tempfile.mkdtemp(prefix=f"sbk-{tag}-", dir=short_temp_base()))
        return cls(root, socket_owner=socket_owner, sockets_in=sockets_in)

    def close(self) -> None:
        for fd in (self._sockets_fd, self._private_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- one kernel -------------------------------------------------------------------------------
    def new_kernel(self, sockets_inside: str) -> KernelFiles:
        """Write a new kernel's connection file; ``sockets_inside`` is the sockets directory as the kernel sees it."""
        self._count += 1
        name = f"k{self._count}-{secrets.token_hex(3)}"
        info: dict[str, Any] = {
            "transport": "ipc",
            "ip": f"{sockets_inside}/{name}",
            "key": secrets.token_hex(16),
            "signature_scheme": "hmac-sha256",
            "kernel_name": "",
        }
        info.update({f"{channel}_port": port for port, channel in enumerate(CHANNELS, start=1)})
        fd = os.open(
            f"{name}.json",
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=self._sockets_fd,
        )
        with os.fdopen(fd, "w") as f:
            if self._owner is not None:
                os.fchown(f.fileno(), self._owner, self._owner)
            json.dump(info, f)
        return KernelFiles(name, info, f"{sockets_inside}/{name}.json", self._log.pipe())

    def connect_info(self, kernel: KernelFiles, alive: Callable[[], bool], timeout: float) -> dict[str, Any]:
        """Wait until the kernel has bound its sockets; the connection info for the harness's client.

        Raises ``KernelError`` if the kernel exits first, or ``timeout`` seconds pass.
        """
        deadline = time.monotonic() + timeout
        for port in range(1, len(CHANNELS) + 1):
            socket_name = f"{kernel.name}-{port}"
            while (fd := self._open_socket(socket_name)) is None:
                if not alive():
                    raise KernelError("the kernel exited during start-up")
                if time.monotonic() > deadline:
                    raise KernelError(f"the kernel did not open its sockets within {timeout:.0f} s")
                time.sleep(0.01)
            kernel.socket_fds.append(fd)
            os.symlink(f"/proc/self/fd/{fd}", socket_name, dir_fd=self._private_fd)
        return {**kernel.kernel_info, "ip": str(self.private / kernel.name)}

    def _open_socket(self, name: str) -> int | None:
        """An ``O_PATH`` descriptor of the socket ``name`` in the sockets directory, or None while it is not
        there; anything else by that name (a link, a file) is refused."""
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._sockets_fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise KernelError(f"cannot open the kernel's socket {name}: {e}") from e
        mode = os.fstat(fd).st_mode
        if not stat.S_ISSOCK(mode):
            os.close(fd)
            raise KernelError(f"the kernel's socket {name} is not a socket: something else took its place")
        return fd

    def log_tail(self, chars: int = 2000) -> str:
        """The end of what the sandbox's kernels wrote to their output."""
        return self._log.last(chars).decode("utf-8", "replace")

    def forget(self, kernel: KernelFiles) -> None:
        """Drop the harness's links to a dead kernel's sockets."""
        kernel.close()
        for port in range(1, len(CHANNELS) + 1):
            try:
                os.unlink(f"{kernel.name}-{port}", dir_fd=self._private_fd)
            except OSError:
                pass

"""Where super-bench keeps what outlives a run on this machine (standard library only: the command line reads
it before anything else is imported)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path


def cache_dir() -> Path:
    """``$SUPER_BENCH_ENV_CACHE``, else ``super-bench`` in the user's cache directory (``$XDG_CACHE_HOME`` or
    ~/.cache)."""
    if os.environ.get("SUPER_BENCH_ENV_CACHE"):
        return Path(os.environ["SUPER_BENCH_ENV_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "super-bench"


@contextlib.contextmanager
def file_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``, made if missing, never opened through a symbolic link (whoever
    could plant one there could point it at a file of the harness's). The lock goes with its holder: a process
    that dies releases it. Raises ``OSError`` where the file cannot be opened, and ``TimeoutError`` (an
    ``OSError`` too) where ``timeout`` seconds pass without the lock: a holder that is stopped, not dead, would
    otherwise keep every waiter waiting."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        if timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"{path} stayed locked by another process for {timeout:g} s") from None
                    time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock

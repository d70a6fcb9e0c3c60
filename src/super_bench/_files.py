"""Opening the files of a directory that is anyone's data (a run directory: a colleague's, a submission, an
imported run) so that nothing in it leads the reader elsewhere or holds it up.

Every open here refuses a symbolic link as the last part of the path (``O_NOFOLLOW``: a ``.lock`` or a
``results.jsonl`` planted as a link to ``/etc/shadow`` is never truncated, written or read), takes only a
regular file (a FIFO, a device or a socket is refused at once: the open itself does not wait, ``O_NONBLOCK``),
and reads at most a stated number of bytes (a sparse file of a terabyte costs nothing to make and would cost
the reader its memory). Standard library only: the layers above all read through it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

# A trajectory holds every step's kept output (the episode's limit of kept output, in JSON's escapes) and
# parsing takes several times a file's size in memory: no run writes a record file larger than this.
MAX_RECORD_BYTES = 1 << 30

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


class UnsafeFileError(OSError):
    """A file of a run directory that is not read or written: a link, not a regular file, or too large. An
    ``OSError``, so that readers that skip an unreadable file skip this one too; its message says why."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(f"{os.fspath(path)} {why}")


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of the regular file at ``path`` (``flags`` as ``os.open``'s; ``O_CREAT`` makes it), never
    through a final symbolic link and never waiting on a FIFO's writer. ``FileNotFoundError`` where it is
    missing; ``UnsafeFileError`` where it is a link or not a regular file. The descriptor blocks as usual."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeFileError(path, "is a symbolic link: not followed") from None
        if e.errno == errno.ENXIO:  # a FIFO opened to write with no reader, or a socket
            raise UnsafeFileError(path, "is not a regular file (a FIFO or a socket): not opened") from None
        raise
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind != stat.S_IFREG:
            raise UnsafeFileError(path, f"is {_KINDS.get(kind, 'not a regular file')}, not a regular file: not read")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int = MAX_RECORD_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``), refused with ``UnsafeFileError`` when it
    holds more than ``limit``: its size is asked first, and a file that grows while read is cut off at the
    limit and refused, so the reader never holds more than ``limit`` bytes of it."""
    with os.fdopen(open_regular(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise UnsafeFileError(path, f"holds {_mib(size)}, more than a run's file may ({_mib(limit)}): not read")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFileError(path, f"grew past {_mib(limit)} while it was read: not read")
    return data


def open_append(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened to append (made if missing), as a regular file only (``open_regular``)."""
    return os.fdopen(open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself, not a link to one (no open: nothing can block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size:,} bytes"

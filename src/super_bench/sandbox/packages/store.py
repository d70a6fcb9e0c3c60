"""The package cache's store: package files by their SHA-256, written only by the harness.

``files/<sha[:2]>/<sha>`` holds a file fetched once from the index and kept only if its content has the
hash the index published; ``unpacked/<sha>/`` holds a wheel's files, unpacked once, read-only, for tasks
whose installs link to them. A file is fetched under a temporary name, checked, and renamed into place, so
that processes sharing a store (runs at once, Ray workers of one node) never see half of one, and no task
is given a byte of it before its hash is known to be right. Tasks asking for one file at once share one
download, which stops, bounded in size and time, when the last of them is gone.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import shutil
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path, PurePosixPath

from super_bench._sizes import human_size
from super_bench.errors import PackageRequestRefused, SandboxError
from super_bench.sandbox.lifetime.build_cache import DONE_MARKER, build_into, is_built
from super_bench.sandbox.packages.sources import Limits, Response, read_bounded

CHUNK = 1 << 20


class Budget:
    """The bytes one task may still make the store download (``None``: no bound of its own; the store's total
    bound still holds). Shared downloads are charged to the task that started them."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.spent = 0
        self._lock = threading.Lock()

    def check(self, size: int | None) -> None:
        """Refuse a file whose published ``size`` would pass what is left, before any of it is fetched."""
        with self._lock:
            if self.total is not None and size is not None and self.spent + size > self.total:
                raise self._spent(size)

    def charge(self, count: int) -> None:
        with self._lock:
            self.spent += count
            if self.total is not None and self.spent > self.total:
                raise self._spent(None)

    def _spent(self, size: int | None) -> PackageRequestRefused:
        asked = f" (this file: {size:,} bytes)" if size is not None else ""
        return PackageRequestRefused(
            507,
            f"the task's download budget is spent: {self.spent:,} of {self.total:,} bytes fetched into the package "
            f"cache{asked}; the budget is twice the task's disk limit",
        )


class Download:
    """One file being fetched into the store for the tasks in ``wanted``, charged to ``budget``."""

    def __init__(self, temporary: Path, wanted: str, budget: Budget | None = None) -> None:
        self.temporary = temporary
        self.budget = budget
        self.wanted = {wanted}
        self.cancelled = False
        self.finished = False
        self.error: PackageRequestRefused | None = None
        self.changed = threading.Condition()

    def wait(self, seconds: float) -> bool:
        """Whether the download has finished, waiting up to ``seconds`` for it."""
        with self.changed:
            return self.changed.wait_for(lambda: self.finished, seconds)


class PackageStore:
    """Package files by content (see the module's docstring), in ``directory``."""

    def __init__(self, directory: Path, limits: Limits | None = None) -> None:
        self.directory = directory
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._downloads: dict[str, Download] = {}
        self._unpacking: dict[str, threading.Lock] = {}
        self._evicting = threading.Lock()
        for part in ("files", "unpacked", "tmp"):
            (directory / part).mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)

    def path(self, sha256: str) -> Path:
        return self.directory / "files" / sha256[:2] / sha256

    def fetch(
        self, sha256: str, source: Callable[[], Response], size: int | None, wanted: str, budget: Budget | None = None
    ) -> Download | None:
        """Fetch the file into the store for the task ``wanted`` (None: it is there already). ``source`` opens
        it upstream; ``size``: the size its index published, if any, which it must not pass; ``budget``: the
        task's, charged with every byte fetched (a file published larger than what is left is refused first)."""
        with self._lock:
            if self.path(sha256).is_file():
                return None
            download = self._downloads.get(sha256)
            if download is not None:
                download.wanted.add(wanted)
                return download
            if budget is not None:
                budget.check(size)
            fd, name = tempfile.mkstemp(prefix=f"{sha256[:16]}-", dir=self.directory / "tmp")
            os.close(fd)
            download = self._downloads[sha256] = Download(Path(name), wanted, budget)
        threading.Thread(target=self._download, args=(sha256, source, size, download), daemon=True).start()
        return download

    def release(self, wanted: str) -> None:
        """The task ``wanted`` is gone: downloads no other task waits for stop."""
        with self._lock:
            for sha256, download in list(self._downloads.items()):
                download.wanted.discard(wanted)
                if not download.wanted:
                    download.cancelled = True
                    del self._downloads[sha256]

    def _download(self, sha256: str, source: Callable[[], Response], size: int | None, download: Download) -> None:
        digest = hashlib.sha256()
        limit = self.limits.file_bytes if size is None else min(size, self.limits.file_bytes)
        deadline = time.monotonic() + self.limits.file_seconds

        def take(block: bytes) -> None:
            if download.cancelled:
                raise PackageRequestRefused(410, "no task waits for the file any more: its download stopped")
            if time.monotonic() > deadline:
                raise PackageRequestRefused(504, f"the file took longer than {self.limits.file_seconds:.0f} s")
            if download.budget is not None:
                download.budget.charge(len(block))
            digest.update(block)
            out.write(block)

        try:
            if size is not None and size > self.limits.file_bytes:
                raise PackageRequestRefused(
                    502, f"the file's {human_size(size)} pass the cache's limit of {human_size(limit)}"
                )
            with closing(source()) as response, open(download.temporary, "wb") as out:
                read_bounded(response, limit, "the file", take)
            if digest.hexdigest() != sha256:
                raise PackageRequestRefused(502, f"the file does not have the SHA-256 its index published ({sha256})")
            target = self.path(sha256)
            target.parent.mkdir(exist_ok=True)
            os.chmod(download.temporary, 0o644)
            os.replace(download.temporary, target)
            self.evict(keep=sha256)
        except PackageRequestRefused as e:
            download.error = e
        except (OSError, ValueError) as e:  # urllib's errors are OSErrors
            download.error = PackageRequestRefused(502, f"cannot fetch the file: {e}")
        finally:
            download.temporary.unlink(missing_ok=True)
            with self._lock:
                if self._downloads.get(sha256) is download:
                    del self._downloads[sha256]
            with download.changed:
                download.finished = True
                download.changed.notify_all()

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove the files used longest ago (and their unpacked wheels) until the store holds at most
        ``limits.store_bytes``; ``keep``: a file just fetched, never removed. Returns the removed files' hashes.
        A file being served stays readable to its reader (an open file outlives its name); links tasks hold
        to unpacked files are their own."""
        with self._evicting:
            entries, total = [], 0
            for folder in (self.directory / "files").iterdir():
                if not folder.is_dir() or folder.is_symlink():
                    continue
                for entry in os.scandir(folder):
                    info = entry.stat(follow_symlinks=False)
                    size = info.st_blocks * 512 + _tree_bytes(self.directory / "unpacked" / entry.name)
                    entries.append((info.st_mtime, entry.name, size))
                    total += size
            removed = []
            for _, sha256, size in sorted(entries):
                if total <= self.limits.store_bytes:
                    break
                if sha256 == keep:
                    continue
                self.path(sha256).unlink(missing_ok=True)
                shutil.rmtree(self.directory / "unpacked" / sha256, ignore_errors=True)
                total -= size
                removed.append(sha256)
            return removed

    def stored(self, sha256: str) -> Iterator[bytes]:
        """A stored file's bytes, checked against its hash as they go: a file found changed (on a disk that
        failed, say) is removed, so that the next request fetches it again. Serving it marks it used (its
        modification time), which orders eviction."""
        path = self.path(sha256)
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            with contextlib.suppress(OSError):
                os.utime(f.fileno())
            while data := f.read(CHUNK):
                digest.update(data)
                yield data
        if digest.hexdigest() != sha256:
            path.unlink(missing_ok=True)
            raise SandboxError(f"the cached file {path} had changed: removed")

    # -- wheels unpacked, for installs that link to their files -------------------------------------------
    def unpacked(self, sha256: str) -> Path:
        """The stored wheel ``sha256`` unpacked once: files read-only (executable where the wheel says),
        directories readable by all; only a wheel's importable files (not its .dist-info or .data)."""
        target = self.directory / "unpacked" / sha256
        if is_built(target):
            return target
        with self._lock:
            lock = self._unpacking.setdefault(sha256, threading.Lock())
        with lock:  # one unpacking per wheel in this process; build_into keeps processes apart
            return build_into(target, functools.partial(self._unpack, sha256), finish=_readable_directory)

    def _unpack(self, sha256: str, into: Path) -> None:
        for _ in self.stored(sha256):  # checks the file's hash before trusting what it holds
            pass
        try:
            with zipfile.ZipFile(self.path(sha256)) as wheel:
                for info in wheel.infolist():
                    name = PurePosixPath(info.filename)
                    if info.is_dir() or not linkable(info.filename):
                        continue
                    if name.is_absolute() or "\\" in info.filename or any(p in ("", ".", "..") for p in name.parts):
                        raise SandboxError(f"a cached wheel names a file outside itself: {info.filename}")
                    path = into.joinpath(*name.parts)
                    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                    with wheel.open(info) as source, open(path, "xb") as out:
                        shutil.copyfileobj(source, out, CHUNK)
                    executable = (info.external_attr >> 16) & 0o111
                    path.chmod(0o555 if executable else 0o444)
                    # The wheel's own time, not the unpacking's: a task that edits a linked file gets a new
                    # file of the present time, which then differs from what its byte code was compiled
                    # from, even when the edit comes within the second pip installed the link.
                    stamp = time.mktime((*info.date_time, 0, 0, -1))
                    os.utime(path, (stamp, stamp))
        except (zipfile.BadZipFile, OSError) as e:
            raise SandboxError(f"cannot unpack the cached wheel {sha256}: {e}") from e
        for dirpath, _, _ in os.walk(into):
            os.chmod(dirpath, 0o755)

    def link_into(self, sha256: str, directory_fd: int, owner: int) -> str:
        """Hard links to the unpacked wheel's files, made in a new directory under the open directory
        ``directory_fd`` (a task's, which agent code may change meanwhile: everything is made relative to
        descriptors, never through a path it could swap for a link). The new directories are given to
        ``owner`` once made, so that its pip can move the links into place; the files stay the cache's,
        read-only. Returns the new directory's name."""
        unpacked = self.unpacked(sha256)
        name = f".super-bench-links-{secrets.token_hex(8)}"
        os.mkdir(name, 0o755, dir_fd=directory_fd)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory_fd)
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                raise SandboxError("the links directory was replaced while it was made")
            made = []
            for dirpath, dirnames, filenames in os.walk(unpacked):
                relative = os.path.relpath(dirpath, unpacked)
                for child in dirnames:
                    path = os.path.normpath(os.path.join(relative, child))
                    os.mkdir(path, 0o755, dir_fd=fd)  # in directories only this process can write yet
                    made.append(path)
                for child in filenames:
                    if child == DONE_MARKER and relative == ".":
                        continue
                    try:
                        os.link(os.path.join(dirpath, child), os.path.join(relative, child), dst_dir_fd=fd)
                    except OSError:
                        continue  # too many links to one file, say: pip writes this one itself
            for path in made:
                os.chown(path, owner, owner, dir_fd=fd, follow_symlinks=False)
            os.fchown(fd, owner, owner)
        finally:
            os.close(fd)
        return name


def _tree_bytes(path: Path) -> int:
    """What a folder's files take on disk (0 where there is none)."""
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def linkable(record_path: str) -> bool:
    """Whether a wheel's file can be a link: not in its ``.dist-info`` or ``.data`` (pip rewrites those)."""
    return not record_path.split("/", 1)[0].endswith((".dist-info", ".data"))


def _readable_directory(unpacked: Path) -> None:
    """An unpacked wheel's top directory readable by all (``mkdtemp`` makes it its owner's only); its files
    keep the read-only modes ``_unpack`` gave them."""
    unpacked.chmod(0o755)

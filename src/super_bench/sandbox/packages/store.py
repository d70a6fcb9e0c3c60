"""The package cache's store: package files by their SHA-256, written only by the harness.

``files/<sha[:2]>/<sha>`` holds a file fetched once from the index and kept only if its content has the
hash the index published; ``unpacked/<sha>/`` holds a wheel's files, unpacked once, read-only, for tasks
whose installs link to them. A file is written under a temporary name and renamed into place, so that
processes sharing a store (runs at once, Ray workers of one node) never see half of one; while a file is
being fetched, every request for it reads it as it grows, from the one download.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from super_bench.errors import SandboxError

CHUNK = 1 << 20
_DONE = ".complete"


class Download:
    """One file being fetched into the store, which readers follow as it grows."""

    def __init__(self, temporary: Path) -> None:
        self.temporary = temporary
        self.written = 0
        self.finished = False
        self.error: str | None = None
        self.changed = threading.Condition()

    def follow(self) -> Iterator[bytes]:
        """The file's bytes as they arrive (opened now); raises ``SandboxError`` if the download fails."""
        return self._chunks(open(self.temporary, "rb"))  # closed by the generator

    def _chunks(self, f: BinaryIO) -> Iterator[bytes]:
        with f:
            while True:
                data = f.read(CHUNK)
                if data:
                    yield data
                    continue
                with self.changed:
                    while self.written == f.tell() and not self.finished:
                        self.changed.wait(5)
                    if self.written == f.tell() and self.finished:
                        if self.error is not None:
                            raise SandboxError(self.error)
                        return


class PackageStore:
    """Package files by content (see the module's docstring), in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._downloads: dict[str, Download] = {}
        self._unpacking: dict[str, threading.Lock] = {}
        for part in ("files", "unpacked", "tmp"):
            (directory / part).mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)

    def path(self, sha256: str) -> Path:
        return self.directory / "files" / sha256[:2] / sha256

    def read(self, sha256: str, request: urllib.request.Request) -> Iterator[bytes]:
        """The file's bytes: from the store, or as they arrive from upstream (fetched once, whoever asks)."""
        with self._lock:
            if self.path(sha256).is_file():
                return self.stored(sha256)
            download = self._downloads.get(sha256)
            if download is None:
                fd, name = tempfile.mkstemp(prefix=f"{sha256[:16]}-", dir=self.directory / "tmp")
                os.close(fd)
                download = self._downloads[sha256] = Download(Path(name))
                thread = threading.Thread(target=self._download, args=(sha256, request, download), daemon=True)
                thread.start()
            return download.follow()  # opened under the lock: the download cannot be renamed away first

    def _download(self, sha256: str, request: urllib.request.Request, download: Download) -> None:
        digest = hashlib.sha256()
        url = request.full_url
        try:
            with urllib.request.urlopen(request, timeout=120) as response, open(download.temporary, "wb") as out:
                while data := response.read(CHUNK):
                    digest.update(data)
                    out.write(data)
                    out.flush()
                    with download.changed:
                        download.written += len(data)
                        download.changed.notify_all()
            if digest.hexdigest() != sha256:
                raise SandboxError(f"{url} does not have the SHA-256 its index published ({sha256}): not kept")
            target = self.path(sha256)
            target.parent.mkdir(exist_ok=True)
            os.chmod(download.temporary, 0o644)
            with self._lock:  # readers that opened the temporary file read on from it
                os.replace(download.temporary, target)
                self._downloads.pop(sha256, None)
        except (OSError, SandboxError, ValueError) as e:
            download.error = str(e) if isinstance(e, SandboxError) else f"cannot fetch {url}: {e}"
            with self._lock:
                self._downloads.pop(sha256, None)
            download.temporary.unlink(missing_ok=True)
        finally:
            with download.changed:
                download.finished = True
                download.changed.notify_all()

    def stored(self, sha256: str) -> Iterator[bytes]:
        """A stored file's bytes, checked against its hash as they go: a file found changed (on a disk that
        failed, say) is removed, so that the next request fetches it again."""
        path = self.path(sha256)
        digest = hashlib.sha256()
        with open(path, "rb") as f:
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
        if (target / _DONE).is_file():
            return target
        with self._lock:
            lock = self._unpacking.setdefault(sha256, threading.Lock())
        with lock:
            if (target / _DONE).is_file():
                return target
            building = Path(tempfile.mkdtemp(prefix=f".{sha256[:16]}-", dir=target.parent))
            try:
                self._unpack(sha256, building)
                (building / _DONE).write_text("")
                building.chmod(0o755)
                try:
                    os.rename(building, target)
                except OSError:
                    if not (target / _DONE).is_file():
                        raise
            finally:
                shutil.rmtree(building, ignore_errors=True)
        return target

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
                    if child == _DONE and relative == ".":
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


def linkable(record_path: str) -> bool:
    """Whether a wheel's file can be a link: not in its ``.dist-info`` or ``.data`` (pip rewrites those)."""
    return not record_path.split("/", 1)[0].endswith((".dist-info", ".data"))

"""A container's files read and written from the host side, by the engine's own ``cp``: no program inside the
container runs, so none agent code planted there (a ``cat`` first on its ``PATH``, an ``sh`` in ``/bin``) can
stream without end into the harness or hold it up.

The engine resolves the path inside the container's own root (links included, never out of it) and sends the
file as a tar stream: the harness reads the entry's header first, refuses anything but a regular file, and one
larger than the limit, before reading a byte of its content; then the content, at most the size the header
gave. Writing copies a file the harness staged (at most the edit's limit) to the path, with the owner and
mode it had; the engine follows a link there inside the container's root, as agent code's own write would.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
import threading
from typing import IO, NoReturn

from super_bench.sandbox.base import FileTooLargeError

# Seconds one copy may take (a file the engine streams slowly, a stopped container).
COPY_TIMEOUT = 120.0


def copy_out(engine: list[str], container: str, path: str, limit: int | None) -> tuple[tarfile.TarInfo, bytes]:
    """The regular file at ``path`` (absolute, in the container) and its header; ``FileNotFoundError`` where it is
    missing, ``OSError`` where it is not a regular file, ``FileTooLargeError`` past ``limit`` (None: any size)."""
    proc = subprocess.Popen([*engine, "cp", f"{container}:{path}", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stderr is not None
    deadline = threading.Timer(COPY_TIMEOUT, proc.kill)
    deadline.start()
    try:
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                member = tar.next()
                if member is not None:
                    return member, _content(tar, member, path, limit)
        except tarfile.TarError as e:
            _fail(proc, path, f"the engine's copy of it could not be read ({e})")
        _fail(proc, path, "the engine sent nothing of it")
    finally:
        deadline.cancel()
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _content(tar: tarfile.TarFile, member: tarfile.TarInfo, path: str, limit: int | None) -> bytes:
    if not member.isreg():
        raise OSError(f"{path} is not a regular file")
    if limit is not None and member.size > limit:
        raise FileTooLargeError(path, member.size, limit)
    stream = tar.extractfile(member)
    if stream is None:
        raise OSError(f"{path} is not a regular file")
    return stream.read(member.size)


def _fail(proc: subprocess.Popen[bytes], path: str, otherwise: str) -> NoReturn:
    """Raise what the engine said of ``path`` (missing: ``FileNotFoundError``), else ``otherwise``."""
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
    said = _bounded(proc.stderr).decode("utf-8", "replace").strip()
    if "no such file" in said.lower() or "could not be found" in said:
        raise FileNotFoundError(2, "No such file or directory", path)
    raise OSError(f"cannot read {path}: {said or otherwise}")


def _bounded(stream: IO[bytes] | None, limit: int = 1 << 16) -> bytes:
    return stream.read(limit) if stream is not None else b""


def copy_in(engine: list[str], engine_name: str, container: str, path: str, data: bytes, like: tarfile.TarInfo) -> None:
    """Write ``data`` as the file ``path`` (absolute, in the container; a link there is followed, inside the
    container's root, as a write by agent code would be), with ``like``'s owner and mode."""
    with tempfile.TemporaryDirectory(prefix="super-bench-edit-") as folder:
        staged = os.path.join(folder, "file")
        with open(staged, "wb") as f:
            f.write(data)
        os.chmod(staged, like.mode & 0o7777)
        if os.geteuid() == 0:
            os.chown(staged, like.uid, like.gid)
        # The staged file's owner goes with it: podman's cp keeps it only without --archive, docker's only with.
        keep_owner = ["--archive=false"] if engine_name == "podman" else ["--archive"]
        proc = subprocess.run(
            [*engine, "cp", *keep_owner, staged, f"{container}:{path}"], capture_output=True, timeout=COPY_TIMEOUT
        )
    if proc.returncode != 0:
        said = proc.stderr[-(1 << 12) :].decode("utf-8", "replace").strip()
        raise OSError(f"cannot write {path}: {said or f'exit status {proc.returncode}'}")

"""Helpers for the mirror tests: git repositories made on the spot, and a package index with upload
times (PEP 691 JSON, PEP 700 upload-time), served over real HTTP on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest
from tests.support.sandboxes import tiny_wheel

from super_bench.sandbox.mirrors.serving import PIP_WITH_UPLOAD_FILTER

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
# A user id nobody on the machine has: mirrors given to it are "owned by someone else".
OTHER_UID = 4242


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, mark: str) -> str:
    """A repository at ``path`` whose one commit holds ``MARK`` = ``mark``; returns the commit."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    (path / "MARK").write_text(mark + "\n")
    git("add", "MARK", cwd=path)
    git("commit", "-q", "-m", mark, cwd=path)
    return git("rev-parse", "HEAD", cwd=path).strip()


def make_mirror(path: Path, kind: str, mark: str) -> Path:
    """A mirror of the given kind (``bare``, ``clone`` or ``bundle``) at ``path``, owned by another user
    where the tests run as root, readable by everyone."""
    source = path.parent / f".src-{path.name}"
    make_repo(source, mark)
    if kind == "clone":
        path.parent.mkdir(parents=True, exist_ok=True)
        source.rename(path)
    elif kind == "bare":
        git("clone", "-q", "--bare", str(source), str(path))
    else:
        git("bundle", "create", "-q", str(path), "HEAD", "main", cwd=source)
    give_away(path)
    return path


def give_away(path: Path) -> None:
    """Make ``path`` another user's (when root) and readable by all."""
    subprocess.run(["chmod", "-R", "a+rX", str(path)], check=True)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OTHER_UID}:{OTHER_UID}", str(path)], check=True)


def dated_wheels(directory: Path, name: str, uploads: dict[str, str]) -> dict[str, tuple[Path, str]]:
    """One wheel per version (``VALUE`` is the version's major number), each with its upload time."""
    directory.mkdir(parents=True, exist_ok=True)
    wheels = {}
    for version, uploaded in uploads.items():
        wheel = tiny_wheel(directory, name, int(version.split(".")[0]), version=version)
        wheels[version] = (wheel, uploaded)
    return wheels


@contextmanager
def package_index(
    packages: dict[str, dict[str, tuple[Path, str]]], *, bytes_per_second: float | None = None, lying: bool = False
) -> Iterator[tuple[str, list[str]]]:
    """Serve ``packages`` (name -> version -> (wheel, upload time)) as a JSON simple index on loopback;
    yields the index URL and the list of paths requested so far. ``bytes_per_second``: files are sent no
    faster, all connections together (one link, shared as a network's is); ``lying``: the index publishes
    hashes that are not the files' own."""
    requested: list[str] = []
    link = threading.Lock()
    link_free_at = [0.0]  # when the shared link has sent everything given to it so far

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            parts = [unquote(p) for p in self.path.split("?")[0].split("/") if p]
            if len(parts) == 2 and parts[0] == "simple" and parts[1] in packages:
                files = [
                    {
                        "filename": wheel.name,
                        "url": f"/files/{parts[1]}/{wheel.name}",
                        "hashes": {"sha256": hashlib.sha256(wheel.read_bytes() + b"x" * lying).hexdigest()},
                        "upload-time": uploaded,
                    }
                    for wheel, uploaded in packages[parts[1]].values()
                ]
                body = {
                    "meta": {"api-version": "1.1"},
                    "name": parts[1],
                    "versions": list(packages[parts[1]]),
                    "files": files,
                }
                self._send(json.dumps(body).encode(), "application/vnd.pypi.simple.v1+json")
            elif len(parts) == 3 and parts[0] == "files" and parts[1] in packages:
                wheel = next((w for w, _ in packages[parts[1]].values() if w.name == parts[2]), None)
                if wheel is None:
                    self.send_error(404)
                else:
                    self._send(wheel.read_bytes(), "application/octet-stream", bytes_per_second)
            else:
                self.send_error(404)

        def _send(self, body: bytes, kind: str, rate: float | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = len(body) if rate is None else max(1, int(rate / 10))
            for start in range(0, len(body), step):
                chunk = body[start : start + step]
                if rate is not None:  # the chunk takes the link's next free slot
                    with link:
                        link_free_at[0] = max(time.monotonic(), link_free_at[0]) + len(chunk) / rate
                        sent_at = link_free_at[0]
                    time.sleep(max(0.0, sent_at - time.monotonic()))
                self.wfile.write(chunk)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", requested
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def pip26_python() -> Path:
    """A task Python with a pip new enough for the upload-time filter: this one (super-bench needs pip 26)."""
    from importlib.metadata import version

    assert int(version("pip").split(".")[0]) >= PIP_WITH_UPLOAD_FILTER[0]
    return Path(sys.executable)


# sbdated 1.0, 2.0 and 3.0 (VALUE 1, 2, 3), uploaded in 2023, mid-2024 and 2025.
UPLOADS = {"1.0": "2023-05-01T10:00:00Z", "2.0": "2024-06-01T12:00:00Z", "3.0": "2025-02-01T00:00:00Z"}


@pytest.fixture(scope="session")
def dated_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """The index URL serving sbdated, and the paths requested from it so far."""
    wheels = dated_wheels(tmp_path_factory.mktemp("wheels"), "sbdated", UPLOADS)
    with package_index({"sbdated": wheels}) as served:
        yield served

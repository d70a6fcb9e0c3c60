"""The package cache: a caching proxy of the package index that the harness runs on loopback for pip in tasks.

Each process runs one small HTTP server (a thread) per cache directory, from the first task that uses it.
Every task gets an address of its own, with a random token in its path:
``PIP_INDEX_URL=http://127.0.0.1:PORT/TOKEN/simple/``. What it may fetch, and how, is ``sources``'s
rule: a task names a project and nothing else.

- A project page is fetched from the upstream indexes (``--pip-index``; else PyPI; the index and extra
  indexes the harness's pip is configured with only with ``--host-pip-config``, leaving out any whose
  address carries credentials),
  merged, and served as JSON, each file's address rewritten to the proxy's (``/TOKEN/files/SHA256/NAME``).
  Upload times pass through; with ``--packages-as-of`` the proxy itself leaves out files uploaded after the
  date (and files without an upload time), so the date holds whatever pip the task runs. Pages are kept
  for a minute.
- A file is fetched once into the store (``store``), checked against the SHA-256 the index
  published, and only then served, to every task from there; pip checks the hash again. While it is being
  fetched, pip is kept waiting with interim ``100 Continue`` answers. A file published without a SHA-256
  keeps its upstream address: pip fetches it itself, and nothing is cached.
- Installs that link: where agent code runs as a user of its own and the task directory is on the store's
  file system, pip inside the task asks ``/TOKEN/link/SHA256`` for hard links to a wheel's unpacked files,
  read-only, instead of writing copies (``in_task/pip_links.py``).
- Each task has listeners of its own (``connections``): a loopback port, and for a sandbox without a network
  (docker's, with ``--network off``) a unix socket, opened on first use in a directory of its own (readable by
  all, as loopback is reachable by all) and bound into the container: the same handler, the same rules. A
  listener answers only its own task's token; its connections are capped, time out when idle, and are
  closed with it when the task ends.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from super_bench.errors import PackageRequestRefused, SandboxError
from super_bench.sandbox.packages.connections import ConnectionHub, TrackedHandler
from super_bench.sandbox.packages.index_pages import JSON_TYPE, IndexFile, parse_page, render_page
from super_bench.sandbox.packages.sources import (
    Index,
    Limits,
    missing_project,
    open_source,
    project_name,
    read_bounded,
    request_for,
)
from super_bench.sandbox.packages.store import Budget, PackageStore

log = logging.getLogger(__name__)

PYPI = "https://pypi.org/simple"
PAGE_SECONDS = 60.0
KEEP_WAITING_SECONDS = 2.0  # between interim answers to a pip that waits for a file being fetched
LOGGED = 500  # characters of a refusal logged: what a task sent is in it, and a task can send many
_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


@dataclass(frozen=True)
class LinkTarget:
    """Where a task's pip may get links: its Python environment, open since the task started."""

    directory_fd: int
    owner: int  # agent code's user id
    inside: str  # where agent code sees the directory


@dataclass(frozen=True)
class _Listed:
    """A file a task's page listed: the index that listed it, how to ask for it, its size, or why not."""

    index: Index
    request: urllib.request.Request
    size: int | None
    refused: str | None = None


@dataclass(frozen=True)
class _Task:
    indexes: tuple[str, ...] | Callable[[], tuple[str, ...]]
    links: LinkTarget | None
    uploaded_before: datetime | None = None
    files: dict[str, _Listed] = field(default_factory=dict)  # sha256 (or refused/N) -> the file
    budget: Budget = field(default_factory=lambda: Budget(None))

    @functools.cached_property
    def upstreams(self) -> tuple[str, ...]:
        # Read when the task first installs: finding the harness's configured indexes takes a pip process,
        # which a task that installs nothing should not wait for.
        return self.indexes() if callable(self.indexes) else self.indexes


class PackageProxy:
    """The proxy (see the module's docstring) over one store."""

    def __init__(self, store: PackageStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._pages: dict[tuple[str, str], tuple[float, list[IndexFile] | None]] = {}
        self._ports: dict[str, int] = {}
        self._hub = ConnectionHub(_handler(self))

    def address(self, token: str) -> str:
        """Where the task ``token`` reaches the proxy on loopback (a port of its own)."""
        with self._lock:
            return f"http://127.0.0.1:{self._ports[token]}"

    def unix_socket(self, token: str) -> Path:
        """The task's unix socket (opened on first use), for sandboxes that reach no loopback port of the host."""
        return self._hub.unix_socket(token)

    def open_connections(self, token: str) -> int:
        """How many connections the task ``token`` holds open now."""
        return self._hub.open_connections(token)

    def register(
        self,
        upstreams: tuple[str, ...] | Callable[[], tuple[str, ...]],
        links: LinkTarget | None,
        uploaded_before: datetime | None = None,
        download_bytes: int | None = None,
    ) -> str:
        """A task's token; ``upstreams``: its indexes, or what finds them when the task first asks;
        ``uploaded_before``: the moment (``--packages-as-of``) its files must have been uploaded before;
        ``download_bytes``: how much it may make the store fetch (None: only the store's own bound)."""
        token = secrets.token_hex(16)
        port = self._hub.open_task(token)
        with self._lock:
            self._tasks[token] = _Task(upstreams, links, uploaded_before, budget=Budget(download_bytes))
            self._ports[token] = port
        return token

    def unregister(self, token: str) -> None:
        """The task is gone: its address answers no more, its connections are closed, and downloads only it
        waited for stop."""
        with self._lock:
            self._tasks.pop(token, None)
            self._ports.pop(token, None)
        self._hub.close_task(token)
        self.store.release(token)

    def task(self, token: str) -> _Task | None:
        with self._lock:
            return self._tasks.get(token)

    # -- pages ----------------------------------------------------------------------------------------
    def _upstream_files(self, index: Index, project: str) -> list[IndexFile] | None:
        """The files one upstream index lists for ``project`` (None: it has no such project)."""
        key = (index.url, project)
        with self._lock:
            cached = self._pages.get(key)
        if cached is not None and time.monotonic() - cached[0] < PAGE_SECONDS:
            return cached[1]
        request = request_for(index.page_url(project), (index.url,))
        limits = self.store.limits
        try:
            response = open_source(request, index, limits.stall_seconds, page=True)
            with response:
                body = read_bounded(response, limits.page_bytes, f"the page {request.full_url}")
                files: list[IndexFile] | None = parse_page(
                    body, response.headers.get("Content-Type", ""), response.geturl()
                )
        except OSError as e:
            if not missing_project(e):
                raise
            files = None
        with self._lock:
            self._pages[key] = (time.monotonic(), files)
        return files

    def page(self, token: str, project: str) -> bytes | None:
        """The project's page for a task: every upstream's files (the first index's where two list one
        name), file addresses the proxy's; None where no upstream has the project. An upstream that does
        not answer fails the page: a page of the others' files would change what the task installs, unseen."""
        task = self.task(token)
        if task is None:
            return None
        merged: dict[str, tuple[Index, IndexFile]] = {}
        found, failures = False, []
        for upstream in task.upstreams:
            index = Index(upstream)
            try:
                files = self._upstream_files(index, project)
            except (OSError, ValueError, SandboxError) as e:
                failures.append(f"{upstream}: {e}")
                continue
            if files is None:
                continue
            found = True
            for f in files:
                merged.setdefault(f.filename, (index, f))
        if failures:
            raise PackageRequestRefused(502, "a package index did not answer: " + "; ".join(failures))
        if not found:
            return None
        served = []
        for index, f in merged.values():
            if not f.uploaded_before(task.uploaded_before):
                continue
            refused = index.refusal(f.url)
            if refused is not None:
                # Kept on the page, so that pip says why it cannot have the file rather than pick another.
                key = f"refused-{len(task.files)}"
                task.files[key] = _Listed(index, request_for(f.url), f.size, refused)
                served.append(dataclasses.replace(f, url=f"/{token}/files/{key}/{f.filename}"))
            elif f.sha256 is None:
                served.append(f)
            else:
                task.files[f.sha256] = _Listed(index, request_for(f.url, task.upstreams), f.size)
                served.append(dataclasses.replace(f, url=f"/{token}/files/{f.sha256}/{f.filename}"))
        return render_page(project, served)

    def budget(self, token: str) -> Budget:
        """What the task ``token`` may still make the store fetch (``PackageRequestRefused`` for no task)."""
        task = self.task(token)
        if task is None:
            raise PackageRequestRefused(404, "not a task of this proxy")
        return task.budget

    def listed(self, token: str, key: str) -> _Listed:
        """A file the task's pages listed, or ``PackageRequestRefused``."""
        task = self.task(token)
        listed = task.files.get(key) if task is not None else None
        if listed is None:
            raise PackageRequestRefused(404, "not a file of a page this proxy served")
        if listed.refused is not None:
            raise PackageRequestRefused(403, f"refused: {listed.refused}")
        return listed


def _handler(proxy: PackageProxy) -> type[TrackedHandler]:
    stall = proxy.store.limits.stall_seconds

    class Handler(TrackedHandler):
        protocol_version = "HTTP/1.1"  # interim answers (100 Continue) are HTTP/1.1's

        def log_message(self, *args: Any) -> None:
            pass

        def _parts(self) -> list[str]:
            parts = [p for p in self.path.split("?", 1)[0].split("/") if p]
            # A listener serves its own task alone: another task's token on it is a token no task holds here.
            return parts if parts and parts[0] == getattr(self.server, "token", None) else ["-"]

        def _send(self, status: int, body: bytes, kind: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parts = self._parts()
            try:
                if len(parts) == 3 and parts[1] == "simple":
                    page = proxy.page(parts[0], project_name(parts[2]))
                    if page is None:
                        self._send(404, b"not found")
                    else:
                        self._send(200, page, JSON_TYPE)
                elif len(parts) == 4 and parts[1] == "files":
                    self._file(parts[0], parts[2])
                else:
                    self._send(404, b"not found")
            except PackageRequestRefused as e:
                log.warning("package cache: %s", str(e)[:LOGGED])
                self._send(e.status, f"{e}\n".encode())
            except (ConnectionError, TimeoutError):
                pass  # pip went away

        def _file(self, token: str, key: str) -> None:
            listed = proxy.listed(token, key)
            source = functools.partial(open_source, listed.request, listed.index, stall)
            download = proxy.store.fetch(key, source, listed.size, token, proxy.budget(token))
            while download is not None and not download.wait(KEEP_WAITING_SECONDS):
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # pip reads on, and waits for the answer
                self.wfile.flush()
            if download is not None and download.error is not None:
                raise download.error
            path = proxy.store.path(key)
            chunks = proxy.store.stored(key)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(chunk)
            except SandboxError as e:  # the stored file changed on disk: the answer ends short, pip refuses it
                log.warning("package cache: %s", str(e)[:LOGGED])
                self.close_connection = True

        def do_POST(self) -> None:
            parts = self._parts()
            task = proxy.task(parts[0]) if len(parts) == 3 and parts[1] == "link" else None
            if task is None or task.links is None or not re.fullmatch(r"[0-9a-f]{64}", parts[2]):
                self._send(404, b"no links here")
                return
            if not proxy.store.path(parts[2]).is_file():
                self._send(404, b"not in the cache")
                return
            links = task.links
            try:
                name = proxy.store.link_into(parts[2], links.directory_fd, links.owner)
            except (OSError, SandboxError) as e:
                log.warning("package cache: no links for %s: %s", parts[2], e)
                self._send(409, str(e).encode())
                return
            self._send(200, json.dumps({"path": f"{links.inside}/{name}"}).encode(), "application/json")

    return Handler


_proxies: dict[Path, PackageProxy] = {}
_proxies_lock = threading.Lock()


def proxy_for(directory: Path, limits: Limits | None = None) -> PackageProxy:
    """This process's proxy over the store in ``directory`` (started on first use, with ``limits``)."""
    directory = directory.resolve()
    with _proxies_lock:
        if directory not in _proxies:
            try:
                _proxies[directory] = PackageProxy(PackageStore(directory, limits))
            except OSError as e:
                raise SandboxError(f"cannot start the package cache in {directory}: {e}") from e
        return _proxies[directory]


@functools.cache
def configured_indexes() -> tuple[str, ...]:
    """The index and extra indexes the harness's pip is configured with (its variables, then its configuration
    files), without those whose address carries credentials; PyPI where none is left as the index."""
    found: dict[str, str] = {}
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    rank = {":env:": 3, "install": 2, "global": 1}
    best: dict[str, int] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if name in ("index-url", "extra-index-url") and rank.get(section, 0) >= best.get(name, 0):
            best[name], found[name] = rank.get(section, 0), value.strip().strip("'\"")
    indexes = [found.get("index-url") or PYPI, *found.get("extra-index-url", "").split()]
    kept = [url for url in indexes if not _CREDENTIALS.search(url)]
    if not kept or kept[0] != indexes[0]:
        kept.insert(0, PYPI)
    return tuple(dict.fromkeys(kept))

"""The package cache: a caching proxy of the package index that the harness runs on loopback for pip in tasks.

Each process runs one small HTTP server (a thread) per cache directory, from the first task that uses it.
Every task gets an address of its own, with a random token in its path:
``PIP_INDEX_URL=http://127.0.0.1:PORT/TOKEN/simple/``.

- A project page is fetched from the upstream indexes (``--pip-index``; else the index and extra indexes
  the harness's pip is configured with, leaving out any whose address carries credentials; else PyPI),
  merged, and served as JSON, each file's address rewritten to the proxy's (``/TOKEN/files/SHA256/NAME``).
  Upload times pass through, so ``--packages-as-of`` works as with the index itself. Pages are kept
  for a minute.
- A file is fetched once into the store (``store``), kept only when its content has the SHA-256
  the index published, and served to every task from there; pip checks the hash again. A file published
  without a SHA-256 keeps its upstream address: pip fetches it itself, and nothing is cached.
- Installs that link: where agent code runs as a user of its own and the task directory is on the store's
  file system, pip inside the task asks ``/TOKEN/link/SHA256`` for hard links to a wheel's unpacked files,
  read-only, instead of writing copies (``data/pip_links.py``).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from super_bench.errors import SandboxError
from super_bench.sandbox.packages.index_pages import ACCEPT, JSON_TYPE, IndexFile, normalize, parse_page, render_page
from super_bench.sandbox.packages.store import PackageStore

log = logging.getLogger(__name__)

PYPI = "https://pypi.org/simple"
PAGE_SECONDS = 60.0
_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


@dataclass(frozen=True)
class LinkTarget:
    """Where a task's pip may get links: its Python environment, open since the task started."""

    directory_fd: int
    owner: int  # agent code's user id
    inside: str  # where agent code sees the directory


@dataclass(frozen=True)
class _Task:
    indexes: tuple[str, ...] | Callable[[], tuple[str, ...]]
    links: LinkTarget | None

    @functools.cached_property
    def upstreams(self) -> tuple[str, ...]:
        # Read when the task first installs: finding the harness's configured indexes takes a pip process,
        # which a task that installs nothing should not wait for.
        return self.indexes() if callable(self.indexes) else self.indexes


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}:{parts.port or ''}"


def _request(url: str, upstreams: tuple[str, ...] = ()) -> urllib.request.Request:
    """A request for ``url``. Credentials (``user:password@``) in it, or in the upstream index on the same
    host, go into a header, as pip sends them."""
    headers = {"Accept": ACCEPT, "User-Agent": "super-bench package cache"}
    parts = urlsplit(url)
    with_credentials = [u for u in (url, *upstreams) if urlsplit(u).username is not None and _host(u) == _host(url)]
    if with_credentials:
        own = urlsplit(with_credentials[0])
        credentials = f"{own.username}:{own.password or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        url = urlunsplit(parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else "")))
    if parts.scheme == "file" and os.path.isdir(urllib.request.url2pathname(parts.path)):
        url = url.rstrip("/") + "/index.html"  # a directory of pages, as pip reads one
    return urllib.request.Request(url, headers=headers)


class PackageProxy:
    """The proxy (see the module's docstring) over one store."""

    def __init__(self, store: PackageStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._pages: dict[tuple[str, str], tuple[float, list[IndexFile] | None]] = {}
        self._files: dict[str, tuple[urllib.request.Request, int | None]] = {}  # sha256 -> its upstream, its size
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="super-bench-package-cache", daemon=True).start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def register(self, upstreams: tuple[str, ...] | Callable[[], tuple[str, ...]], links: LinkTarget | None) -> str:
        """A task's token; ``upstreams``: its indexes, or what finds them when the task first asks."""
        token = secrets.token_hex(16)
        with self._lock:
            self._tasks[token] = _Task(upstreams, links)
        return token

    def unregister(self, token: str) -> None:
        with self._lock:
            self._tasks.pop(token, None)

    def task(self, token: str) -> _Task | None:
        with self._lock:
            return self._tasks.get(token)

    # -- pages ----------------------------------------------------------------------------------------
    def _upstream_files(self, upstream: str, project: str) -> list[IndexFile] | None:
        """The files one upstream index lists for ``project`` (None: it has no such project)."""
        key = (upstream, project)
        with self._lock:
            cached = self._pages.get(key)
        if cached is not None and time.monotonic() - cached[0] < PAGE_SECONDS:
            return cached[1]
        request = _request(f"{upstream.rstrip('/')}/{project}/", (upstream,))
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                page_url = response.geturl()
                files: list[IndexFile] | None = parse_page(
                    response.read(), response.headers.get("Content-Type", ""), page_url
                )
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
            files = None
        except urllib.error.URLError as e:
            if not isinstance(e.reason, FileNotFoundError):  # a local index (file://) without the project
                raise
            files = None
        except FileNotFoundError:
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
        merged: dict[str, IndexFile] = {}
        found, failures = False, []
        for upstream in task.upstreams:
            try:
                files = self._upstream_files(upstream, project)
            except (OSError, ValueError) as e:
                failures.append(f"{upstream}: {e}")
                continue
            if files is None:
                continue
            found = True
            for f in files:
                merged.setdefault(f.filename, f)
        if failures:
            raise SandboxError("a package index did not answer: " + "; ".join(failures))
        if not found:
            return None
        served = []
        for f in merged.values():
            sha = f.sha256
            if sha is None:
                served.append(f)
                continue
            with self._lock:
                self._files[sha] = (_request(f.url, task.upstreams), f.size)
            served.append(dataclasses.replace(f, url=f"/{token}/files/{sha}/{f.filename}"))
        return render_page(project, served)

    def upstream_file(self, sha256: str) -> tuple[urllib.request.Request, int | None] | None:
        with self._lock:
            return self._files.get(sha256)


def _handler(proxy: PackageProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _parts(self) -> list[str]:
            return [p for p in self.path.split("?", 1)[0].split("/") if p]

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
                    page = proxy.page(parts[0], normalize(parts[2]))
                    if page is None:
                        self._send(404, b"not found")
                    else:
                        self._send(200, page, JSON_TYPE)
                elif len(parts) == 4 and parts[1] == "files" and proxy.task(parts[0]) is not None:
                    self._file(parts[2])
                else:
                    self._send(404, b"not found")
            except SandboxError as e:
                log.warning("package cache: %s", e)
                self._send(502, str(e).encode())
            except (ConnectionError, TimeoutError):
                pass  # pip went away

        def _file(self, sha256: str) -> None:
            known = proxy.upstream_file(sha256)
            if known is None and not proxy.store.path(sha256).is_file():
                self._send(404, b"not a file of a page this proxy served")
                return
            request, size = known or (urllib.request.Request("file:///"), None)
            chunks = proxy.store.read(sha256, request)
            if proxy.store.path(sha256).is_file() and size is None:
                size = proxy.store.path(sha256).stat().st_size
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if size is not None:
                self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(chunk)
            except SandboxError as e:  # the answer ends short, or its hash is wrong: pip refuses the file
                log.warning("package cache: %s", e)
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


def proxy_for(directory: Path) -> PackageProxy:
    """This process's proxy over the store in ``directory`` (started on first use)."""
    directory = directory.resolve()
    with _proxies_lock:
        if directory not in _proxies:
            try:
                _proxies[directory] = PackageProxy(PackageStore(directory))
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

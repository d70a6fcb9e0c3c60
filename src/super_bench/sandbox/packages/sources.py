"""What the package cache may fetch for a task, and how: the boundary between the names and pages a task can
shape and the files of the harness's host.

A task names a project, nothing else; the proxy reads only the configured indexes and the files they list:

- A project name is a PEP 508 name (letters, digits, ``-_.``), so no separator, encoded or not, and no
  ``..`` ever reaches an index's address: the page read is always ``INDEX/<normalized name>/``.
- A page's files must lie under their index's own root, over its own schemes: under a ``file://`` index's
  directory (its parent, for an index in a folder named ``simple``), checked on the real path of the file
  as opened, which must be a regular file (no symbolic link out, no ``/dev`` or ``/proc``); for an HTTP index,
  ``http``/``https`` only, at the index's own host, or over ``https`` at a named host that is not this
  machine's (a download host such as PyPI's). Redirects follow the same rule. A file that breaks it stays on
  the page but is answered with 403 and the reason.
- Every read is bounded: pages and files in size (a file also by the size its index published) and in time
  (a stall, and the whole transfer).
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import stat
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPMessage
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from super_bench._sizes import human_size
from super_bench.errors import PackageRequestRefused
from super_bench.sandbox.packages.index_pages import ACCEPT

_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


# The most of a name a task sent that a refusal repeats.
SHOWN_NAME = 100


def project_name(raw: str) -> str:
    """The normalized name (PEP 503) of the project a task asked for, or ``PackageRequestRefused`` (400)."""
    decoded = unquote(raw)
    if len(decoded) > 200 or not _NAME.fullmatch(decoded):
        # The name is the task's: what is said of it (answered, and logged by the harness) is cut short.
        shown = repr(raw[:SHOWN_NAME]) + (f" (cut: {len(raw):,} characters)" if len(raw) > SHOWN_NAME else "")
        raise PackageRequestRefused(400, f"not a project name: {shown} (letters, digits and -_. only)")
    return re.sub(r"[-_.]+", "-", decoded).lower()


@dataclass(frozen=True)
class Limits:
    """Bounds on what the cache reads from an index."""

    page_bytes: int = 64 << 20
    file_bytes: int = 16 << 30
    # The store as a whole: past this, the files used longest ago are removed (with what was unpacked of them)
    # once a new file is in. Room for SUPER's heaviest environments (torch with CUDA is about 5 GB of wheels).
    store_bytes: int = 32 << 30
    stall_seconds: float = 60.0  # no byte for this long ends a transfer
    file_seconds: float = 3600.0  # a whole file


def _local(host: str) -> bool:
    """Whether ``host`` names this machine or a private network (by name or literal address)."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost") or "." not in name:
        return True
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return not address.is_global


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    return parts.port or {"http": 80, "https": 443}.get(parts.scheme)


@dataclass(frozen=True)
class Index:
    """One configured index and the root its files must lie under."""

    url: str

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme.lower()

    @property
    def directory(self) -> Path | None:
        """A ``file://`` index's directory, its real path."""
        if self.scheme != "file":
            return None
        return Path(os.path.realpath(urllib.request.url2pathname(urlsplit(self.url).path)))

    @property
    def root(self) -> Path | None:
        directory = self.directory
        if directory is None:
            return None
        return directory.parent if directory.name == "simple" else directory

    def page_url(self, project: str) -> str:
        return f"{self.url.rstrip('/')}/{project}/"

    def refusal(self, url: str) -> str | None:
        """Why the cache will not read ``url`` for this index (None: it may)."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if self.scheme == "file":
            if scheme != "file" or parts.netloc not in ("", "localhost"):
                return f"{url} is not a file of the local index {self.url}"
            path = urllib.request.url2pathname(parts.path)
            if not within(os.path.realpath(path), self.root):
                return f"{url} lies outside the local index's folder {self.root}"
            return None
        if self.scheme not in ("http", "https") or scheme not in ("http", "https"):
            return f"{url}: only http and https are read for the index {self.url}"
        own = urlsplit(self.url)
        host = (parts.hostname or "").lower()
        if host == (own.hostname or "").lower() and _port(url) == _port(self.url):
            return None
        if scheme == "https" and host and not _local(host):
            return None
        return f"{url} is on another host than the index {self.url}, and not a public https address"


def within(path: str, root: Path | None) -> bool:
    return root is not None and (path == str(root) or path.startswith(str(root).rstrip("/") + "/"))


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only where the index's rule allows the new address."""

    def __init__(self, index: Index) -> None:
        self.index = index

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        why = self.index.refusal(newurl)
        if why is not None:
            raise PackageRequestRefused(403, f"{req.full_url} redirects to {newurl}: {why}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _LocalFile:
    """A ``file://`` response, opened with its real path checked against the index's root."""

    def __init__(self, url: str, index: Index, page: bool) -> None:
        path = urllib.request.url2pathname(urlsplit(url).path)
        if page and os.path.isdir(path):
            path = os.path.join(path, "index.html")  # a directory of pages, as pip reads one
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # a FIFO must not block the proxy
        except FileNotFoundError:
            raise
        except OSError as e:
            raise PackageRequestRefused(403, f"cannot read {url}: {e.strerror}") from e
        self._file = os.fdopen(fd, "rb")
        # The real path of what was opened, not of the name: a link swapped in meanwhile cannot lead out.
        real = os.readlink(f"/proc/self/fd/{fd}") if os.path.islink(f"/proc/self/fd/{fd}") else os.path.realpath(path)
        bound = index.directory if page else index.root
        if not within(real, bound) or not stat.S_ISREG(os.fstat(fd).st_mode):
            self._file.close()
            raise PackageRequestRefused(403, f"{url} is not a file inside the local index's folder {bound}")
        self.url = url
        self.headers: dict[str, str] = {"Content-Type": "text/html"}

    def __enter__(self) -> _LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, size: int = -1) -> bytes:
        return self._file.read(size)

    def geturl(self) -> str:
        return self.url

    def close(self) -> None:
        self._file.close()


Response = Any  # a urllib response, or a _LocalFile


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}:{parts.port or ''}"


def request_for(url: str, upstreams: tuple[str, ...] = ()) -> urllib.request.Request:
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
    return urllib.request.Request(url, headers=headers)


def open_source(request: urllib.request.Request, index: Index, stall: float, page: bool = False) -> Response:
    """Open ``request`` (a page of ``index``, or a file it listed), under the index's rule; the caller closes it."""
    url = request.full_url
    if not page:
        why = index.refusal(url)
        if why is not None:
            raise PackageRequestRefused(403, why)
    if urlsplit(url).scheme.lower() == "file":
        if index.scheme != "file":
            raise PackageRequestRefused(403, f"{url} is not a file of the index {index.url}")
        return _LocalFile(url, index, page)
    opener = urllib.request.build_opener(_Redirects(index))
    return opener.open(request, timeout=stall)


def read_bounded(response: Response, limit: int, what: str, each: Callable[[bytes], None] | None = None) -> bytes:
    """Read ``response`` whole (``each``: given each block instead, nothing kept), refusing more than ``limit``
    bytes."""
    kept, total = [], 0
    read = getattr(response, "read1", response.read)  # what has come, so that limits are checked as it comes
    while block := read(1 << 20):
        total += len(block)
        if total > limit:
            raise PackageRequestRefused(502, f"{what} is larger than {human_size(limit)}: not read further")
        if each is None:
            kept.append(block)
        else:
            each(block)
    return b"".join(kept)


def missing_project(e: BaseException) -> bool:
    """Whether an error opening a page means the index has no such project."""
    if isinstance(e, urllib.error.HTTPError):
        return e.code == 404
    if isinstance(e, urllib.error.URLError):
        return isinstance(e.reason, FileNotFoundError)
    return isinstance(e, FileNotFoundError)

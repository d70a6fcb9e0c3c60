"""The package cache as an attacker uses it: a task names a project, and nothing it can write or name makes the
proxy read a page or a file of its choosing (a host file, a device, another host's service), read without
bounds, go on reading after the task has gone, or hand over a byte before the file's hash is known right.

Each test runs the real proxy against a ``file://`` index laid out as pip's local indexes are
(``simple/<project>/index.html`` linking ``../../files/...``) or a real HTTP index on loopback."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import tiny_wheel

from super_bench.errors import PackageRequestRefused
from super_bench.sandbox.packages.proxy import PackageProxy
from super_bench.sandbox.packages.sources import Limits, project_name
from super_bench.sandbox.packages.store import PackageStore

SECRET = b"harness-secret-0123456789\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def local_index(root: Path, pages: dict[str, list[tuple[str, str]]]) -> str:
    """A ``file://`` index under ``root`` whose project pages link (href, sha256) each; returns its URL."""
    (root / "simple").mkdir(parents=True, exist_ok=True)
    for project, links in pages.items():
        page = root / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        anchors = "".join(f'<a href="{href}#sha256={digest}">{href.rsplit("/", 1)[-1]}</a>\n' for href, digest in links)
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{anchors}</body></html>\n")
    return (root / "simple").as_uri()


def fetch(url: str, timeout: float = 30) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def page_urls(proxy: PackageProxy, token: str, project: str) -> dict[str, str]:
    """The files of a project's page as the proxy serves it: file name -> its address at the proxy."""
    import json

    status, body = fetch(f"{proxy.address(token)}/{token}/simple/{project}/")
    assert status == 200, body
    return {f["filename"]: proxy.address(token) + f["url"] for f in json.loads(body)["files"]}


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "host" / "secret.whl"  # named like a wheel: the name gives nothing away
    path.parent.mkdir()
    path.write_bytes(SECRET)
    return path


def test_a_project_name_with_encoded_separators_or_dots_is_refused_before_any_index_is_read(
    tmp_path: Path, secret: Path
) -> None:
    index = local_index(tmp_path / "index", {"good": []})
    # The task's own page, beside the index, linking a host file with its right hash.
    evil = tmp_path / "task" / "evil"
    evil.mkdir(parents=True)
    (evil / "index.html").write_text(f'<a href="{secret.as_uri()}#sha256={sha(SECRET)}">secret.whl</a>')
    proxy = PackageProxy(PackageStore(tmp_path / "cache"))
    token = proxy.register((index,), None)
    for name in ("..%2F..%2Ftask%2Fevil", "..%2f..%2ftask%2fevil", "%2E%2E%2F%2E%2E%2Ftask%2Fevil", "a%5C..%5Cb", ".."):
        status, body = fetch(f"{proxy.address(token)}/{token}/simple/{name}/")
        assert status == 400, (name, status, body)
        assert b"not a project name" in body
    with package_index({}) as (http_index, requested):
        token = proxy.register((http_index,), None)
        assert fetch(f"{proxy.address(token)}/{token}/simple/..%2F..%2Fadmin/")[0] == 400
    assert requested == []  # nothing of it reached the HTTP index either


@given(st.text(max_size=40))
def test_project_names_are_pep_508_names_normalized_and_nothing_else(raw: str) -> None:
    from urllib.parse import unquote

    decoded = unquote(raw)
    try:
        name = project_name(raw)
    except PackageRequestRefused as e:
        status = e.status
        name = ""
    else:
        status = 200
    if status != 200:
        assert status == 400
        return
    assert "/" not in decoded and "\\" not in decoded and not decoded.startswith(".") and "%" not in decoded
    assert name and set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


def test_a_local_index_serves_its_own_files_and_nothing_outside_its_folder(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "index"
    (root / "files").mkdir(parents=True)
    wheel = tiny_wheel(root / "files", "sbok", 1)
    (root / "files" / "linked.whl").symlink_to(secret)  # a link inside the index, to a file outside it
    (secret.parent / "beside.whl").write_bytes(SECRET)
    environ = Path("/proc/self/environ")
    index = local_index(
        root,
        {
            "sbok": [(f"../../files/{wheel.name}", sha(wheel.read_bytes()))],
            "sbevil": [
                (secret.as_uri(), sha(SECRET)),
                ("../../files/linked.whl", sha(SECRET)),
                ("../../../host/beside.whl", sha(SECRET)),
                (environ.as_uri(), "0" * 64),
                ("file:///dev/zero", "1" * 64),
            ],
        },
    )
    proxy = PackageProxy(PackageStore(tmp_path / "cache"))
    token = proxy.register((index,), None)
    (ok,) = page_urls(proxy, token, "sbok").values()
    assert fetch(ok) == (200, wheel.read_bytes())
    files = page_urls(proxy, token, "sbevil")
    assert len(files) == 5
    for name, url in files.items():
        started = time.monotonic()
        status, body = fetch(url, timeout=20)
        assert status == 403, (name, status, body[:200])
        assert SECRET not in body and (b"outside" in body or b"inside" in body), body
        assert time.monotonic() - started < 10
    stored = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert stored == [sha(wheel.read_bytes())]  # the index's own file only


def test_a_page_in_the_index_folder_that_links_out_of_it_is_not_read(tmp_path: Path, secret: Path) -> None:
    root = tmp_path / "index"
    index = local_index(root, {})
    (root / "simple" / "sblinked").symlink_to(secret.parent, target_is_directory=True)  # a page folder leading out
    (secret.parent / "index.html").write_text(f'<a href="{secret.as_uri()}#sha256={sha(SECRET)}">s.whl</a>')
    proxy = PackageProxy(PackageStore(tmp_path / "cache"))
    token = proxy.register((index,), None)
    status, body = fetch(f"{proxy.address(token)}/{token}/simple/sblinked/")
    assert status == 502 and b"inside the local index" in body, body


@contextmanager
def service() -> Iterator[tuple[str, list[str]]]:
    """Another HTTP service on loopback (the harness's own API, say): its address and what was asked of it."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(SECRET)))
            self.end_headers()
            self.wfile.write(SECRET)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def http_index(
    files: dict[str, tuple[str, str, int | None]], body: bytes = b"", rate: float | None = None
) -> Iterator[tuple[str, dict[str, object]]]:
    """An HTTP index whose one project ``sbx`` lists ``files`` (name -> (url, sha256, declared size)); a URL
    ``/served/NAME`` answers ``body`` (forever, when ``body`` is empty), at ``rate`` bytes a second."""
    import json

    seen: dict[str, object] = {"sent": 0, "closed": False}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/simple/sbx/":
                entries = []
                for name, (url, digest, size) in files.items():
                    entry: dict[str, object] = {"filename": name, "url": url, "hashes": {"sha256": digest}}
                    if size is not None:
                        entry["size"] = size
                    entries.append(entry)
                page = json.dumps({"meta": {"api-version": "1.1"}, "name": "sbx", "files": entries}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
            elif self.path.startswith("/redirect/"):
                self.send_response(302)
                self.send_header("Location", self.path.removeprefix("/redirect/").replace("|", "/"))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path.startswith("/served/"):
                self.send_response(200)
                self.end_headers()
                try:
                    while True:
                        chunk = body or b"\0" * 65536
                        self.wfile.write(chunk)
                        seen["sent"] = int(str(seen["sent"])) + len(chunk)
                        if body:
                            return
                        if rate is not None:
                            time.sleep(len(chunk) / rate)
                except OSError:
                    seen["closed"] = True
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_http_index_page_cannot_send_the_proxy_to_another_service_or_to_host_files(
    tmp_path: Path, secret: Path
) -> None:
    with service() as (other, asked):
        digest = sha(SECRET)
        files = {
            "foreign.whl": (f"{other}/token", digest, None),  # another port of this machine
            "local.whl": (secret.as_uri(), digest, None),
            "localhost.whl": (f"https://localhost:{other.rsplit(':', 1)[1]}/x", digest, None),
            "private.whl": ("https://10.1.2.3/x.whl", digest, None),
            "redirected.whl": ("/redirect/" + f"{other}/token".replace("/", "|"), digest, None),
        }
        with http_index(files) as (index, _):
            proxy = PackageProxy(PackageStore(tmp_path / "cache"))
            urls = page_urls(proxy, proxy.register((index,), None), "sbx")
            results = {name: fetch(url) for name, url in urls.items()}
    for name, (status, body) in results.items():
        assert status == 403, (name, status, body)
        assert SECRET not in body
    assert b"redirects to" in results["redirected.whl"][1]
    assert asked == []  # the other service was never asked anything


def test_no_byte_of_a_file_reaches_the_task_before_its_hash_is_checked(tmp_path: Path) -> None:
    content = b"not what the index published" * 1000
    with http_index({"x.whl": ("/served/x.whl", "2" * 64, None)}, body=content) as (index, _):
        proxy = PackageProxy(PackageStore(tmp_path / "cache"))
        (url,) = page_urls(proxy, proxy.register((index,), None), "sbx").values()
        status, body = fetch(url)
    assert status == 502 and b"SHA-256" in body and content[:20] not in body
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_files_past_the_size_limit_or_their_published_size_are_refused(tmp_path: Path) -> None:
    big = os.urandom(300_000)
    files = {
        "endless.whl": ("/served/endless.whl", "3" * 64, None),  # like /dev/zero, over HTTP
        "declared-small.whl": ("/served/declared-small.whl", sha(big), 1000),
    }
    limits = Limits(file_bytes=200_000)
    with http_index(files, body=b"") as (index, seen):
        proxy = PackageProxy(PackageStore(tmp_path / "cache", limits))
        urls = page_urls(proxy, proxy.register((index,), None), "sbx")
        status, body = fetch(urls["endless.whl"])
        assert status == 502 and b"larger than 195 KiB" in body, body
        assert int(str(seen["sent"])) < 50_000_000
    with http_index(files, body=big) as (index, _):
        proxy = PackageProxy(PackageStore(tmp_path / "cache2", limits))
        urls = page_urls(proxy, proxy.register((index,), None), "sbx")
        status, body = fetch(urls["declared-small.whl"])
        assert status == 502 and b"larger than 1000 B" in body, body


def test_a_slow_file_is_given_up_at_the_time_limit_and_pip_is_kept_waiting_until_then(tmp_path: Path) -> None:
    limits = Limits(file_seconds=5.0)
    with http_index({"slow.whl": ("/served/slow.whl", "4" * 64, None)}, rate=50_000) as (index, _):
        proxy = PackageProxy(PackageStore(tmp_path / "cache", limits))
        (url,) = page_urls(proxy, proxy.register((index,), None), "sbx").values()
        started = time.monotonic()
        # A client whose own read timeout is shorter than the fetch: interim answers keep it waiting.
        status, body = fetch(url, timeout=3.5)
    assert status == 504 and b"longer than 5 s" in body, body
    assert 4.5 < time.monotonic() - started < 20


def test_a_download_stops_when_the_task_that_asked_for_it_is_gone(tmp_path: Path) -> None:
    with http_index({"slow.whl": ("/served/slow.whl", "5" * 64, None)}, rate=200_000) as (index, seen):
        proxy = PackageProxy(PackageStore(tmp_path / "cache"))
        token = proxy.register((index,), None)
        (url,) = page_urls(proxy, token, "sbx").values()

        def ask() -> None:
            with contextlib.suppress(OSError):  # the task's connection is closed when the task ends
                fetch(url, 60)

        asked = threading.Thread(target=ask, daemon=True)
        asked.start()
        deadline = time.monotonic() + 10
        while int(str(seen["sent"])) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        proxy.unregister(token)
        deadline = time.monotonic() + 15
        while not seen["closed"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert seen["closed"], "the upstream transfer went on after the task was gone"
        asked.join(15)
    assert not [p for p in (tmp_path / "cache" / "tmp").iterdir()]


def test_a_task_gets_only_the_files_its_own_pages_listed(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path, "sbmine", 1)
    with package_index({"sbmine": {"1.0": (wheel, "2024-01-01T00:00:00Z")}}) as (index, _):
        proxy = PackageProxy(PackageStore(tmp_path / "cache"))
        (url,) = page_urls(proxy, proxy.register((index,), None), "sbmine").values()
        assert fetch(url)[0] == 200
        other = proxy.register(((tmp_path / "elsewhere").as_uri(),), None)
        stolen = url.replace(url.split("/")[3], other)
        assert fetch(stolen)[0] == 404  # in the store, but not a file of this task's indexes

"""The package proxy's connections are charged to the task that opens them (docs/threat-model.md, "Accounting"):
a task's idle connections cost the harness a bounded number of threads, a silent one is closed after its
timeout, and a task's connections and sockets are closed when it ends; other tasks are served meanwhile."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from super_bench.errors import PackageRequestRefused
from super_bench.sandbox.packages import connections
from super_bench.sandbox.packages.proxy import PackageProxy
from super_bench.sandbox.packages.sources import SHOWN_NAME, project_name
from super_bench.sandbox.packages.store import PackageStore


def _proxy(tmp_path: Path) -> tuple[PackageProxy, str]:
    (tmp_path / "index" / "simple").mkdir(parents=True)
    return PackageProxy(PackageStore(tmp_path / "cache")), (tmp_path / "index" / "simple").as_uri()


def _idle(address: str, count: int) -> list[socket.socket]:
    host, port = address.removeprefix("http://").split(":")
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(0.2)
        with contextlib.suppress(OSError):  # a full accept queue: the connection waits, or is not made
            sock.connect((host, int(port)))
        opened.append(sock)
    return opened


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _not_found(proxy: PackageProxy, token: str) -> int:
    try:
        urllib.request.urlopen(f"{proxy.address(token)}/{token}/simple/nosuchproject/", timeout=10)
    except urllib.error.HTTPError as e:
        return e.code
    return 200


def test_three_hundred_idle_connections_cost_fewer_than_fifty_threads(tmp_path: Path) -> None:
    proxy, index = _proxy(tmp_path)
    flooding, other = proxy.register((index,), None), proxy.register((index,), None)
    before = threading.active_count()
    opened = _idle(proxy.address(flooding), 300)
    try:
        time.sleep(1.0)
        grew = threading.active_count() - before
        assert grew < 50, f"{grew} threads for one task's idle connections"
        assert proxy.open_connections(flooding) <= connections.MAX_CONNECTIONS
        assert _not_found(proxy, other) == 404  # another task is served meanwhile, at once
        # And the flooded task itself: its own request takes the place of a connection that only sits open
        # (anyone on the machine can open those to its loopback port).
        started = time.monotonic()
        assert _not_found(proxy, flooding) == 404
        assert time.monotonic() - started < 5
        assert threading.active_count() - before < 50
        proxy.unregister(flooding)
        # The task ended: its connections are closed, and their threads gone.
        assert _wait_for(lambda: threading.active_count() - before <= 1, 10), threading.active_count() - before
        assert proxy.open_connections(flooding) == 0
    finally:
        for sock in opened:
            sock.close()
        proxy.unregister(other)


def test_a_connection_that_sends_nothing_is_closed_after_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connections, "IDLE_SECONDS", 1.0)
    proxy, index = _proxy(tmp_path)
    token = proxy.register((index,), None)
    (sock,) = _idle(proxy.address(token), 1)
    sock.settimeout(10)
    started = time.monotonic()
    assert sock.recv(1) == b""  # closed by the proxy
    assert time.monotonic() - started < 5
    assert _wait_for(lambda: proxy.open_connections(token) == 0, 5)
    proxy.unregister(token)


def test_a_tasks_address_and_socket_go_when_it_ends(tmp_path: Path) -> None:
    proxy, index = _proxy(tmp_path)
    token = proxy.register((index,), None)
    address, unix = proxy.address(token), proxy.unix_socket(token)
    assert unix.exists() and _not_found(proxy, token) == 404
    proxy.unregister(token)
    assert not unix.exists() and not unix.parent.exists()
    host, port = address.removeprefix("http://").split(":")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), 2)


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=0, max_size=70_000))
def test_a_refused_names_message_is_bounded_whatever_the_name(raw: str) -> None:
    # A repr spells one character in at most 10 (\U0010ffff).
    assert len(_refusal(raw)) <= 10 * SHOWN_NAME + 200


def _refusal(raw: str) -> str:
    try:
        project_name(raw)
    except PackageRequestRefused as e:
        return str(e)
    return ""


def test_refused_requests_log_the_names_they_sent_cut_short(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """2,000 requests for 60 KB names once made 114 MiB of the harness's log; each line is now bounded."""
    proxy, index = _proxy(tmp_path)
    token = proxy.register((index,), None)
    name = "a%2F" + "x" * 60_000
    with caplog.at_level(logging.WARNING, logger="super_bench.sandbox.packages.proxy"):
        for _ in range(20):
            with contextlib.suppress(urllib.error.HTTPError):
                urllib.request.urlopen(f"{proxy.address(token)}/{token}/simple/{name}/", timeout=10)
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 20 and all(len(line) <= 600 for line in logged), max(map(len, logged))
    assert "cut: 60,004 characters" in logged[0]
    proxy.unregister(token)


def test_connections_that_send_their_headers_slowly_never_keep_a_tasks_pip_out(tmp_path: Path) -> None:
    """Another process on the machine opens the task's connections, and keeps each alive by sending a header
    byte now and then: each is still the one to make room for the task's own request."""
    proxy, index = _proxy(tmp_path)
    token = proxy.register((index,), None)
    slow = _idle(proxy.address(token), connections.MAX_CONNECTIONS)
    try:
        for sock in slow:
            with contextlib.suppress(OSError):
                sock.sendall(f"GET /{token}/simple/x/ HTTP/1.1\r\nHost: a\r\nX-Slow: ".encode())
        time.sleep(0.5)
        assert proxy.open_connections(token) == connections.MAX_CONNECTIONS
        for sock in slow:
            with contextlib.suppress(OSError):
                sock.sendall(b"x")
        started = time.monotonic()
        assert _not_found(proxy, token) == 404
        assert time.monotonic() - started < 5
    finally:
        for sock in slow:
            sock.close()
        proxy.unregister(token)

"""Shared fixtures: real kernels in real sandboxes, ad-hoc tasks, a network-less runner, and a
guard that keeps every test away from real model providers."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.flaky_sandbox import FlakySandbox
from tests.support.helpers import make_task
from tests.support.shared_runs import SharedRuns, session_root

from super_bench import EnvConfig, Environment, SandboxConfig
from super_bench.cli._process import keep_byte_code
from super_bench.sandbox import SANDBOXES

# Where the environment says not to write byte code (PYTHONDONTWRITEBYTECODE), every worker compiled the package
# and rewrote the tests' asserts again (about 4 s of CPU each, half its collection): kept in the user's cache
# instead, as the `super-bench` command keeps its own.
keep_byte_code()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the README's test command): two workers per CPU this process may use, at most 16. Most tests
    wait on kernels, sandboxes and the commands they start: with one worker per CPU, the CPUs were busy about
    half the time; with two, nearly all of it, and the suite ends about a fifth sooner."""
    return min(2 * len(os.sched_getaffinity(0)), 16)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # the order is ours (``pytest_collection_modifyitems``)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Test files with long end-to-end runs (``slow``) first, then the others by their number of tests, each
    file's tests in their order. Workers take whole files in this order (``--dist loadscope``, with xdist's own
    reordering by size off: ``pytest_configure``), so the last files handed out are short ones, and no worker is
    left running a long one while the others have nothing to do."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    size = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow, -size[item.path]))


@pytest.fixture
def tmp_sandbox_root(tmp_path: Path) -> Path:
    root = tmp_path / "sandboxes"
    root.mkdir()
    return root


@pytest.fixture
def env_factory(tmp_sandbox_root: Path) -> Iterator[Any]:
    """Make environments with test-friendly limits; all are closed at the end of the test."""
    made: list[Environment] = []

    def factory(**settings: Any) -> Environment:
        sandbox = settings.pop("sandbox", {})
        config = EnvConfig(sandbox=SandboxConfig(root=tmp_sandbox_root, **sandbox), **settings)
        env = Environment(config)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()


@pytest.fixture
def env(env_factory: Any) -> Environment:
    """A started environment on a trivial task."""
    environment: Environment = env_factory(cell_timeout=30)
    environment.reset(make_task())
    return environment


def _offline_prefix() -> list[str] | None:
    """A command prefix that runs a program with no network at all, if this machine allows it."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--net"], ["unshare", "-r", "--net"]):
        probe = subprocess.run([*prefix, "true"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


@pytest.fixture(scope="session")
def offline() -> list[str]:
    prefix = _offline_prefix()
    if prefix is None:
        pytest.skip("cannot create a network namespace here (unshare unavailable or not permitted)")
    return prefix


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory: pytest.TempPathFactory) -> SharedRuns:
    """The README's long commands, each run once per session (offline where this machine allows it),
    shared read-only by the modules that check them (tests/support/shared_runs.py)."""
    return SharedRuns(session_root(tmp_path_factory), _offline_prefix() or [])


# Variables that could lead a test to a real model provider: its keys, endpoints and credentials.
_PROVIDER_VARIABLE = re.compile(r"^(OPENAI_|ANTHROPIC_|AZURE_OPENAI|TOGETHER_|OPENROUTER_)|_API_KEY$")


def _loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True, scope="session")
def no_real_model_calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test can reach a real model provider: their keys and endpoints are unset, and this process
    may open network connections to loopback addresses only. The response cache is a fresh file."""
    patch = pytest.MonkeyPatch()
    for name in list(os.environ):
        if _PROVIDER_VARIABLE.search(name):
            patch.delenv(name)
    patch.setenv("SUPER_BENCH_CACHE", str(tmp_path_factory.mktemp("cache") / "responses.sqlite"))
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def refuse(sock: socket.socket, address: object) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise ConnectionRefusedError(f"tests may not connect to {address!r}: only loopback is allowed")

    def connect(sock: socket.socket, address: Any) -> None:
        refuse(sock, address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        refuse(sock, address)
        return real_connect_ex(sock, address)

    patch.setattr(socket.socket, "connect", connect)
    patch.setattr(socket.socket, "connect_ex", connect_ex)
    yield
    patch.undo()


@pytest.fixture
def flaky() -> Iterator[type[FlakySandbox]]:
    """The flaky sandbox (tests/support/flaky_sandbox.py) registered as ``flaky``, its counts cleared."""
    SANDBOXES.register("flaky", "tests.support.flaky_sandbox:FlakySandbox")
    FlakySandbox.failures.clear()
    FlakySandbox.starts.clear()
    yield FlakySandbox
    FlakySandbox.failures.clear()
    SANDBOXES.unregister("flaky")

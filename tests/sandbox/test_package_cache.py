"""The package cache: pip in tasks installs through the harness's caching proxy of a real HTTP index, each file
fetched once and kept only with the hash its index published; installed files are read-only links to the
cache where agent code runs as a user of its own, copies elsewhere (in docker always, with the network off too:
through the proxy's unix socket); bwrap tasks without a network get no cache."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import backend_settings, tiny_wheel

from super_bench import Action, EnvConfig, Environment
from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.packages.proxy import proxy_for

UPLOADED = "2024-01-01T00:00:00Z"


def files_fetched(requested: list[str]) -> list[str]:
    return [path for path in requested if path.startswith("/files/")]


def run_cells(env_factory: Any, sandbox: dict[str, Any], cells: list[str], task_id: str = "t") -> list[Any]:
    env = env_factory(cell_timeout=120, sandbox=sandbox)
    env.reset(make_task(task_id))
    steps = [env.step({"type": "execute", "content": cell}) for cell in cells]
    env.close()
    return steps


@pytest.mark.parametrize(
    ("backend", "network"), [("bwrap", True), ("bwrap", False), ("local", True), ("docker", False)]
)
def test_tasks_install_a_file_fetched_once_as_read_only_links_where_agent_code_has_a_user_of_its_own(
    env_factory: Any, tmp_path: Path, backend: str, network: bool
) -> None:
    """Without the network (bwrap's and docker's), the sandbox reaches the proxy through its socket alone."""
    settings = {**backend_settings(backend), "network": network}
    links = backend == "bwrap" and os.geteuid() == 0  # agent code then runs as a user of its own
    wheel = tiny_wheel(tmp_path, "sbcached", 7)
    cache = tmp_path / "cache"
    inspect = (
        "import os, sbcached; path = sbcached.__file__; info = os.stat(path)\n"
        "try:\n    open(path, 'a').close(); writable = True\nexcept PermissionError:\n    writable = False\n"
        "print(sbcached.VALUE, info.st_nlink, writable, os.path.exists(os.path.expanduser('~/.cache/pip')))"
    )
    with package_index({"sbcached": {"1.0": (wheel, UPLOADED)}}) as (index, requested):
        sandbox = {**settings, "pip_index": index, "package_cache_dir": cache}
        for task_id in ("first", "second"):
            install, check = run_cells(env_factory, sandbox, ["!pip install -q sbcached", inspect], task_id)
            assert install.exit_code == 0, install.raw_output
            value, nlink, writable, pip_cache = check.raw_output.split()
            assert value == "7" and pip_cache == "False"  # pip's own cache is off: nothing of it is kept
            # A link is the cache's file, which agent code must not be able to change; a copy is its own.
            assert (int(nlink) > 1, writable) == ((True, "False") if links else (False, "True"))
        assert len(files_fetched(requested)) == 1, requested  # the second task's came from the cache


@pytest.mark.skipif(os.geteuid() != 0, reason="installs link only where agent code runs as a user of its own (root)")
def test_the_edit_action_changes_a_linked_file_for_its_task_only(env_factory: Any, tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path, "sbedited", 7)
    cache = tmp_path / "cache"
    with package_index({"sbedited": {"1.0": (wheel, UPLOADED)}}) as (index, _):
        env = env_factory(
            cell_timeout=120, sandbox={**backend_settings("bwrap"), "pip_index": index, "package_cache_dir": cache}
        )
        env.reset(make_task())
        assert env.step({"type": "execute", "content": "!pip install -q sbedited"}).exit_code == 0
        site = "/venv/lib/python3.11/site-packages/sbedited/__init__.py"
        edit = env.step(
            {"type": "edit", "content": f"{site}\n<<<BEFORE_EDIT>>>\nVALUE = 7\n<<<AFTER_EDIT>>>\nVALUE = 8\n"}
        )
        assert edit.outcome == "ok", edit.observation
        check = env.step({"type": "execute", "content": "import sbedited; print(sbedited.VALUE)"})
        assert check.raw_output.strip() == "8"
    (cached,) = cache.glob("unpacked/*/sbedited/__init__.py")
    assert cached.read_text().startswith("VALUE = 7")  # the cache's copy, which other tasks link to, is unchanged


def test_a_file_whose_content_is_not_what_its_index_published_is_neither_kept_nor_installed(
    env_factory: Any, tmp_path: Path
) -> None:
    wheel = tiny_wheel(tmp_path, "sbpoisoned", 7)
    cache = tmp_path / "cache"
    with package_index({"sbpoisoned": {"1.0": (wheel, UPLOADED)}}, lying=True) as (index, _):
        sandbox = {**backend_settings("local"), "pip_index": index, "package_cache_dir": cache}
        install, check = run_cells(env_factory, sandbox, ["!pip install sbpoisoned 2>&1", "import sbpoisoned"])
    assert install.exit_code != 0 and check.outcome == "error", install.raw_output
    assert not [p for p in (cache / "files").rglob("*") if p.is_file()]


def test_tasks_asking_for_one_file_at_once_share_one_download(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path, "sbshared", 1, padding=300_000)
    body = wheel.read_bytes()
    sha = hashlib.sha256(body).hexdigest()
    with package_index({"sbshared": {"1.0": (wheel, UPLOADED)}}, bytes_per_second=300_000) as (index, requested):
        proxy = proxy_for(tmp_path / "cache")
        tokens = [proxy.register((index,), None) for _ in range(3)]
        received: list[bytes] = []

        def task(token: str) -> None:
            page = json.loads(urllib.request.urlopen(f"{proxy.address(token)}/{token}/simple/sbshared/").read())
            (entry,) = page["files"]
            assert entry["hashes"]["sha256"] == sha and entry["upload-time"] == UPLOADED
            received.append(urllib.request.urlopen(proxy.address(token) + entry["url"]).read())

        threads = [threading.Thread(target=task, args=(token,)) for token in tokens]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert received == [body] * 3
    assert len(files_fetched(requested)) == 1, requested


def test_a_page_is_refused_when_one_of_its_indexes_does_not_answer(tmp_path: Path) -> None:
    # Listing only the files of the indexes that answered would change what the task installs, unseen.
    wheel = tiny_wheel(tmp_path, "sbpartial", 1)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"  # bound, not listening: refused
        with package_index({"sbpartial": {"1.0": (wheel, UPLOADED)}}) as (index, _):
            proxy = proxy_for(tmp_path / "cache")
            missing = (tmp_path / "no-such-index").as_uri()  # a local index without the project: no failure
            answered, partial = proxy.register((index, missing), None), proxy.register((index, down), None)
            assert urllib.request.urlopen(f"{proxy.address(answered)}/{answered}/simple/sbpartial/")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{proxy.address(partial)}/{partial}/simple/sbpartial/")
    assert refused.value.code == 502 and down in refused.value.read().decode()


def test_the_proxy_serves_nothing_to_an_unknown_task_and_links_nothing_it_does_not_hold(tmp_path: Path) -> None:
    wheel = tiny_wheel(tmp_path, "sbprivate", 1)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with package_index({"sbprivate": {"1.0": (wheel, UPLOADED)}}) as (index, requested):
        proxy = proxy_for(tmp_path / "cache")
        token, other = proxy.register((index,), None), proxy.register((index,), None)
        attempts = [
            ("GET", f"/{'0' * 32}/simple/sbprivate/"),  # a token no task has
            ("GET", f"/{other}/simple/sbprivate/"),  # another task's token, at this task's address
            ("GET", f"/{'0' * 32}/files/{sha}/x.whl"),
            ("GET", f"/{token}/files/{sha}/x.whl"),  # a file of no page this proxy served
            ("POST", f"/{token}/link/{sha}"),  # a task whose installs do not link
            ("POST", f"/{token}/link/..%2F..%2Fetc"),
        ]
        for method, path in attempts:
            request = urllib.request.Request(
                proxy.address(token) + path, data=b"" if method == "POST" else None, method=method
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request)
            assert refused.value.code == 404, path
    assert requested == []


def test_a_bwrap_task_without_a_network_reaches_the_cache_at_its_own_loopback(env_factory: Any, tmp_path: Path) -> None:
    """The forwarder serves the cache's socket at the sandbox's own loopback; the host's loopback stays out of
    reach; with the cache off, pip has the index as given (and no way to it)."""
    from super_bench.sandbox.packages.task_access import PACKAGES_PORT

    host_only = socket.socket()
    host_only.bind(("127.0.0.1", 0))
    host_only.listen(1)
    port = host_only.getsockname()[1]
    sandbox = {**backend_settings("bwrap"), "network": False, "pip_index": "http://127.0.0.1:9/simple"}
    probe = (
        "import socket\n"
        f"for port in ({PACKAGES_PORT}, {port}):\n"
        "    s = socket.socket()\n"
        "    try:\n        s.connect(('127.0.0.1', port)); print('reached')\n"
        "    except OSError:\n        print('refused')\n"
        "    s.close()"
    )
    with host_only:
        address, reached = run_cells(env_factory, sandbox, ["!echo $PIP_INDEX_URL", probe])
    assert address.raw_output.strip().startswith(f"http://127.0.0.1:{PACKAGES_PORT}/")
    assert reached.raw_output.split() == ["reached", "refused"], reached.raw_output
    off = {**sandbox, "package_cache": "off"}
    (step,) = run_cells(env_factory, off, ["!echo $PIP_INDEX_URL"], "off")
    assert step.raw_output.strip() == "http://127.0.0.1:9/simple"


@pytest.mark.slow
def test_a_run_asks_pip_for_its_indexes_only_once_a_task_installs(tmp_path: Path) -> None:
    from super_bench import RunConfig, run
    from super_bench.sandbox.packages.proxy import configured_indexes

    configured_indexes.cache_clear()
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "x = 1"}]))
    config = RunConfig(
        agent=f"replay:{actions}", out=tmp_path / "run", env=EnvConfig(sandbox=SandboxConfig(host_pip_config=True))
    )
    outcome = run(config, tasks=[make_task(query="nothing to install")])
    assert outcome.results[0].status == "completed"
    assert configured_indexes.cache_info().currsize == 0  # `pip config list` never ran
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["sandbox"]["package_cache"]["upstreams"] is None


def test_the_cache_serves_from_pypi_whatever_the_hosts_pip_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """An index or extra index of the host's pip reaches a task through the cache only with --host-pip-config."""
    from super_bench.sandbox.packages.proxy import PYPI, configured_indexes
    from super_bench.sandbox.packages.task_access import known_upstreams, upstreams

    monkeypatch.setenv("PIP_INDEX_URL", "https://host-index.example/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://undated-extra.example/simple")
    configured_indexes.cache_clear()
    assert upstreams(SandboxConfig()) == known_upstreams(SandboxConfig()) == (PYPI,)
    assert configured_indexes.cache_info().currsize == 0  # not even asked
    assert upstreams(SandboxConfig(pip_index="http://127.0.0.1:9/simple")) == ("http://127.0.0.1:9/simple",)
    asked = upstreams(SandboxConfig(host_pip_config=True))
    assert callable(asked)
    assert asked()[:2] == ("https://host-index.example/simple", "https://undated-extra.example/simple")
    configured_indexes.cache_clear()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_the_package_cache_socket_serves_a_task_only_what_the_proxy_serves_it(
    backend: str, env_factory: Any, tmp_path: Path
) -> None:
    """From a task with the network off, through the cache's socket: its own token's page, nothing else."""
    wheel = tiny_wheel(tmp_path, "sbsocket", 3)
    with package_index({"sbsocket": {"1.0": (wheel, "2024-01-01T00:00:00Z")}}) as (index, requested):
        sandbox = {
            **backend_settings(backend),
            "network": False,
            "pip_index": index,
            "package_cache_dir": tmp_path / "cache",
        }
        env: Environment = env_factory(cell_timeout=120, sandbox=sandbox)
        env.reset(make_task())
        port = index.split(":")[2].split("/")[0]
        code = (
            "import os, socket, urllib.request, urllib.error\n"
            "own = os.environ['PIP_INDEX_URL']\n"
            "def get(url):\n"
            "    try:\n        return urllib.request.urlopen(url, timeout=30).status\n"
            "    except urllib.error.HTTPError as e:\n        return e.code\n"
            "    except OSError as e:\n        return type(e).__name__\n"
            "print(get(own + 'sbsocket/'))\n"  # its own token: the page
            "print(get(own.replace(own.split('/')[3], '0' * 32) + 'sbsocket/'))\n"  # a token no task holds
            "print(get(own + '..%2F..%2Fetc/'))\n"  # not a project name
            f"print(get('http://127.0.0.1:{port}/simple/sbsocket/'))\n"  # the upstream itself: the network is off
            "d = '/run/super-bench-packages'\n"
            "try:\n    open(d + '/planted', 'w')\nexcept OSError as e:\n    print(e.strerror)\n"
            "try:\n    os.unlink(d + '/' + os.listdir(d)[0])\nexcept OSError as e:\n    print(e.strerror)\n"
        )
        lines = env.step(Action.execute(code)).observation.splitlines()
        assert lines[:3] == ["200", "404", "400"], lines
        assert lines[3] in ("URLError", "ConnectionRefusedError", "TimeoutError"), lines
        assert lines[4:] == ["Read-only file system", "Read-only file system"], lines
        assert [path for path in requested if not path.startswith("/simple/sbsocket")] == []
        env.close()

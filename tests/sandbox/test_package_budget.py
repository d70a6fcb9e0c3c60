"""What a task makes the package proxy download is charged to it, and the store as a whole is bounded
(docs/threat-model.md, "Accounting"): a task's downloads stop at twice its disk limit (agent code can ask the
proxy for files it never installs, which would fill the harness's cache, not the task's disk), and past the
store's size the files used longest ago are removed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import backend_settings, tiny_wheel

from super_bench.sandbox.packages.proxy import PackageProxy
from super_bench.sandbox.packages.sources import Limits
from super_bench.sandbox.packages.store import PackageStore

UPLOADED = "2024-01-01T00:00:00Z"


def _store_bytes(cache: Path) -> int:
    return sum(p.stat().st_size for p in (cache / "files").rglob("*") if p.is_file())


def _ask(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _files(proxy: PackageProxy, token: str, project: str) -> list[str]:
    status, body = _ask(f"{proxy.address(token)}/{token}/simple/{project}/")
    assert status == 200, body
    return [proxy.address(token) + f["url"] for f in json.loads(body)["files"]]


def test_a_task_makes_the_store_download_no_more_than_its_budget(tmp_path: Path) -> None:
    wheels = {f"{n}.0": (tiny_wheel(tmp_path, "sbbudget", n, f"{n}.0", padding=300_000), UPLOADED) for n in range(1, 5)}
    with package_index({"sbbudget": wheels}) as (index, _):
        cache = tmp_path / "cache"
        proxy = PackageProxy(PackageStore(cache))
        token = proxy.register((index,), None, download_bytes=700_000)
        answers = [_ask(url) for url in _files(proxy, token, "sbbudget")]
        assert [status for status, _ in answers] == [200, 200, 507, 507], [a[1][:200] for a in answers]
        assert b"the task's download budget is spent" in answers[2][1]
        assert _store_bytes(cache) <= 700_000
        assert not list((cache / "tmp").iterdir())  # the refused download's part is gone
        # Files already in the store cost no budget: another task is served them, and fetches the rest.
        other = proxy.register((index,), None, download_bytes=700_000)
        assert [_ask(url)[0] for url in _files(proxy, other, "sbbudget")] == [200] * 4


def test_the_store_removes_the_files_used_longest_ago_past_its_size(tmp_path: Path) -> None:
    wheels = {f"{n}.0": (tiny_wheel(tmp_path, "sbevict", n, f"{n}.0", padding=400_000), UPLOADED) for n in range(1, 5)}
    with package_index({"sbevict": wheels}) as (index, requested):
        cache = tmp_path / "cache"
        proxy = PackageProxy(PackageStore(cache, Limits(store_bytes=1_000_000)))
        token = proxy.register((index,), None)
        urls = _files(proxy, token, "sbevict")
        for url in urls:
            assert _ask(url)[0] == 200
            assert _store_bytes(cache) <= 1_000_000
        kept = {p.name for p in (cache / "files").rglob("*") if p.is_file()}
        assert urls[-1].split("/")[-2] in kept and urls[0].split("/")[-2] not in kept
        fetched = len(requested)
        status, body = _ask(urls[0])  # removed, so fetched again (and checked again)
        assert status == 200 and body == wheels["1.0"][0].read_bytes() and len(requested) == fetched + 1


# Agent code asks its proxy for files it never installs: the host's cache would fill, not the task's disk.
FETCH_ALL = """
import json, os, urllib.request, urllib.error
index = os.environ['PIP_INDEX_URL']
base = index.split('/', 3)[:3]
page = json.loads(urllib.request.urlopen(index + 'sbflood/').read())
for entry in page['files']:
    try:
        with urllib.request.urlopen('/'.join(base) + entry['url']) as response:
            while response.read(1 << 20):
                pass
        print('fetched', entry['filename'])
    except urllib.error.HTTPError as e:
        print('refused', e.code, e.read().decode()[:120])
"""


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_files_a_task_asks_for_and_never_installs_grow_the_store_by_at_most_twice_its_disk_limit(
    env_factory: Any, tmp_path: Path, backend: str
) -> None:
    settings = {**backend_settings(backend), "disk_limit": 32 << 20, "package_cache_dir": tmp_path / "cache"}
    if backend == "docker":
        settings["network"] = False  # the proxy's socket is the container's only way out
    else:
        settings.update(network=True, disk_enforcement="watch")
    wheels = {f"{n}.0": (tiny_wheel(tmp_path, "sbflood", n, f"{n}.0", padding=24 << 20), UPLOADED) for n in range(1, 5)}
    with package_index({"sbflood": wheels}) as (index, _):
        env = env_factory(cell_timeout=300, sandbox={**settings, "pip_index": index})
        env.reset(make_task())
        step = env.step({"type": "execute", "content": FETCH_ALL})
    lines = step.observation.splitlines()
    assert sum(line.startswith("fetched ") for line in lines) == 2, step.observation
    assert "refused 507" in step.observation, step.observation
    assert "the task's download budget is spent" in step.observation
    assert _store_bytes(tmp_path / "cache") <= 64 << 20

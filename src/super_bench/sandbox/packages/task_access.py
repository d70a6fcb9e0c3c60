"""A task's use of the package cache (``proxy``): its own address at the proxy, the variables that
send its pip there, and, where installs link, the hook that makes pip link (``data/pip_links.py``).

Used where the cache can be reached and has something to serve: the local and bwrap sandboxes with the
network on (a sandbox without a network reaches no loopback service of the host), with an index to serve
(not an offline bundle's wheels alone, which are on disk already). pip's own cache is switched off in the
task: the harness's holds every download, and nothing pip writes is shared.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from super_bench.sandbox.base import SandboxConfig
from super_bench.sandbox.lifetime.build_cache import cache_dir
from super_bench.sandbox.mirrors.offline_bundle import OfflineBundle
from super_bench.sandbox.packages.proxy import LinkTarget, configured_indexes, proxy_for

HOOK = Path(__file__).resolve().parents[1] / "data" / "pip_links.py"
HOOK_MODULE = "_super_bench_pip_links"


def package_cache_dir(config: SandboxConfig) -> Path:
    return config.package_cache_dir or cache_dir() / "packages"


def upstreams(config: SandboxConfig) -> tuple[str, ...] | Callable[[], tuple[str, ...]]:
    """The indexes the cache serves a task from: ``--pip-index``, else those the harness's pip is configured with
    (found when the task first installs)."""
    return (config.pip_index,) if config.pip_index is not None else configured_indexes


def cache_applies(config: SandboxConfig) -> bool:
    """Whether tasks of ``config`` install through the package cache (see the module's docstring)."""
    if config.package_cache == "off" or not config.network:
        return False
    if config.pip_index is None and config.offline_bundle is not None:
        return OfflineBundle.open(config.offline_bundle).wheelhouse is None
    return True


class PackageSession:
    """One task's address at the package cache; ``close`` when the task stops."""

    def __init__(self, config: SandboxConfig, python_dir: Path, owner: int | None, inside: str) -> None:
        """``python_dir``: the task's Python environment; ``owner``: agent code's user id where it is not the
        harness's; ``inside``: where agent code sees the environment."""
        directory = package_cache_dir(config)
        self.proxy = proxy_for(directory)
        self._fd: int | None = None
        links = None
        # Links are safe only where agent code cannot write the cache's files (another user's, read-only),
        # and possible only on one file system.
        if (
            config.package_cache == "link"
            and owner is not None
            and owner != os.geteuid()
            and os.stat(python_dir).st_dev == os.stat(self.proxy.store.directory).st_dev
        ):
            self._fd = os.open(python_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            links = LinkTarget(self._fd, owner, inside)
        self.links = links is not None
        self.token = self.proxy.register(upstreams(config), links)

    def environ(self, env: dict[str, str]) -> None:
        """Point agent code's pip at the cache, as its one index, in ``env`` (the task's variables)."""
        env.update(
            PIP_INDEX_URL=f"{self.proxy.address}/{self.token}/simple/",
            PIP_CONFIG_FILE=os.devnull,
            PIP_EXTRA_INDEX_URL="",
            PIP_NO_INDEX="",
            PIP_NO_CACHE_DIR="1",
        )
        env.setdefault("PIP_FIND_LINKS", "")  # an offline bundle's wheels stay, beside the index
        if self.links:
            env["SUPER_BENCH_PACKAGE_LINKS"] = f"{self.proxy.address}/{self.token}/link"

    def install_hook(self, site_packages: Path) -> None:
        """Put the hook that makes pip link into the task's environment (where installs link)."""
        if self.links:
            (site_packages / f"{HOOK_MODULE}.py").write_bytes(HOOK.read_bytes())
            (site_packages / f"{HOOK_MODULE}.pth").write_text(f"import {HOOK_MODULE}\n")

    def close(self) -> None:
        self.proxy.unregister(self.token)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

"""A task's use of the package cache (``proxy``): its own address at the proxy, the variables that
send its pip there, and, where installs link, the hook that makes pip link (``in_task/pip_links.py``).

Used where the cache can be reached and has something to serve: the local sandbox with the network on, the
bwrap and docker sandboxes always (without the network through the proxy's unix socket, bound into the
sandbox, which reaches no loopback service of the host), with an index to serve (not an offline bundle's
wheels alone, which are on disk already). pip's own cache is switched off in the task: the
harness's holds every download, and nothing pip writes is shared.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from super_bench.sandbox.config import SandboxConfig
from super_bench.sandbox.lifetime.build_cache import cache_dir
from super_bench.sandbox.mirrors.offline_bundle import OfflineBundle
from super_bench.sandbox.mirrors.serving import upload_cutoff
from super_bench.sandbox.packages.proxy import PYPI, LinkTarget, configured_indexes, proxy_for

HOOK = Path(__file__).resolve().parents[1] / "in_task" / "pip_links.py"
# Sandboxes without the network (docker's, bwrap's) reach the cache through its unix socket, bound in at
# PACKAGES_INSIDE, and a forwarder (in_task/socket_forward.py, FORWARDER its source) started beside agent code
# serves it at PACKAGES_PORT of the sandbox's own loopback: pip speaks HTTP over TCP only.
PACKAGES_INSIDE = "/run/super-bench-packages"
PACKAGES_PORT = 3141
FORWARDER = (Path(__file__).resolve().parents[1] / "in_task" / "socket_forward.py").read_text()
HOOK_MODULE = "_super_bench_pip_links"


def package_cache_dir(config: SandboxConfig) -> Path:
    return config.package_cache_dir or cache_dir() / "packages"


def upstreams(config: SandboxConfig) -> tuple[str, ...] | Callable[[], tuple[str, ...]]:
    """The indexes the cache serves a task from: ``--pip-index``; else, with ``--host-pip-config`` only, those
    the harness's pip is configured with (found when the task first installs); else PyPI. The host's pip
    configuration (an extra index without upload times, a constraint file) reaches no task unasked."""
    if config.pip_index is not None:
        return (config.pip_index,)
    return configured_indexes if config.host_pip_config else (PYPI,)


def known_upstreams(config: SandboxConfig) -> tuple[str, ...] | None:
    """The upstream indexes, if known without asking pip (a subprocess): ``--pip-index``, PyPI, or those a
    task's first install has found already; else None."""
    found = upstreams(config)
    if isinstance(found, tuple):
        return found
    return configured_indexes() if configured_indexes.cache_info().currsize else None


def cache_applies(config: SandboxConfig, *, without_network: bool = False) -> bool:
    """Whether tasks of ``config`` install through the package cache (see the module's docstring);
    ``without_network``: the sandbox reaches the cache with the network off too."""
    if config.package_cache == "off" or not (config.network or without_network):
        return False
    if config.pip_index is None and config.offline_bundle is not None:
        return OfflineBundle.open(config.offline_bundle).wheelhouse is None
    return True


def cache_record(
    config: SandboxConfig, *, without_network: bool = False, copies: str | None = None
) -> dict[str, Any] | None:
    """The package cache's mode, directory and upstream indexes, where tasks install through it; ``copies``: why
    installs copy where links were asked (the backend cannot link). The indexes from pip's configuration
    (``--host-pip-config``) are found when a task first installs (asking pip costs a process): until then, and
    in a run where no task installed anything, they are null (the runner records them at its end)."""
    if not cache_applies(config, without_network=without_network):
        return None
    indexes = known_upstreams(config)
    record: dict[str, Any] = {
        "mode": config.package_cache,
        "directory": str(package_cache_dir(config)),
        "upstreams": None if indexes is None else list(indexes),
    }
    if copies is not None and config.package_cache == "link":
        record |= {"mode": "copy", "asked": "link", "why": copies}
    return record


class PackageSession:
    """One task's address at the package cache; ``close`` when the task stops."""

    def __init__(
        self, config: SandboxConfig, python_dir: Path | None, owner: int | None, inside: str, address: str | None = None
    ) -> None:
        """``python_dir``: the task's Python environment (None: installs never link); ``owner``: agent code's user
        id where it is not the harness's; ``inside``: where agent code sees the environment; ``address``: where
        agent code reaches the proxy, where not at its loopback port."""
        directory = package_cache_dir(config)
        self.proxy = proxy_for(directory)
        self._fd: int | None = None
        links = None
        # Links are safe only where agent code cannot write the cache's files (another user's, read-only),
        # and possible only on one file system.
        if (
            config.package_cache == "link"
            and python_dir is not None
            and owner is not None
            and owner != os.geteuid()
            and os.stat(python_dir).st_dev == os.stat(self.proxy.store.directory).st_dev
        ):
            self._fd = os.open(python_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            links = LinkTarget(self._fd, owner, inside)
        self.links = links is not None
        # What the task makes the harness download is charged to its disk: twice its limit, room for pip to
        # fetch a candidate it then sets aside.
        budget = 2 * config.disk_limit if config.disk_limit is not None else None
        self.token = self.proxy.register(upstreams(config), links, upload_cutoff(config), budget)
        self.address = address or self.proxy.address(self.token)

    def unix_socket(self) -> Path:
        """The task's own unix socket at the proxy (for a sandbox that reaches no loopback port of the host)."""
        return self.proxy.unix_socket(self.token)

    def environ(self, env: dict[str, str]) -> None:
        """Point agent code's pip at the cache, as its one index, in ``env`` (the task's variables)."""
        env.update(
            PIP_INDEX_URL=f"{self.address}/{self.token}/simple/",
            PIP_CONFIG_FILE=os.devnull,
            PIP_EXTRA_INDEX_URL="",
            PIP_NO_INDEX="",
            PIP_NO_CACHE_DIR="1",
        )
        env.setdefault("PIP_FIND_LINKS", "")  # an offline bundle's wheels stay, beside the index
        if self.links:
            env["SUPER_BENCH_PACKAGE_LINKS"] = f"{self.address}/{self.token}/link"

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

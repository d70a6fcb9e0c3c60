"""The supply: what a task may fetch, and from where (git mirrors, the package index and its date, offline
bundles, the Hugging Face cache, the package cache). The one entry point outside ``sandbox/`` has to the
``mirrors`` and ``packages`` rooms: the task tools (``super-bench tasks check``, ``mirror``, repository
reads), the runner (the record of a run's sources) and the command line read them through here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from super_bench.sandbox.backends.support import scrubbed_environ
from super_bench.sandbox.config import SupplySettings
from super_bench.sandbox.mirrors.git_repos import base_url, repository_kind
from super_bench.sandbox.mirrors.offline_bundle import BundledRepository, OfflineBundle
from super_bench.sandbox.mirrors.preflight import GIT_TIMEOUT, check_mirrors, mirror_problems
from super_bench.sandbox.mirrors.serving import (
    check_task_pip,
    git_config_file,
    git_mirrors,
    mirror_environ,
    release_git_config_dir,
    upload_cutoff,
)
from super_bench.sandbox.mirrors.settings import read_packages_as_of
from super_bench.sandbox.packages.task_access import known_upstreams


def pip_environ(config: SupplySettings) -> dict[str, str]:
    """The environment of a pip the harness runs for tasks' packages (``super-bench mirror``'s wheels): the
    host's, scrubbed as agent code's is, with pip's index, date and sources as agent code's pip gets them."""
    pip = {k: v for k, v in mirror_environ(config).items() if k.startswith("PIP_")}
    return {**scrubbed_environ(), **pip}


def describe_supply(config: SupplySettings) -> dict[str, Any]:
    """Where the tasks' repositories and packages come from, when not from the network as of today (what
    ``run.json`` records under ``sandbox``): each git mirror with its kind and the commit its HEAD was at, the
    offline bundle and what it holds, the package index and date, the Hugging Face cache."""
    info: dict[str, Any] = {}
    mirrors = {
        url: {"path": path, "kind": repository_kind(Path(path)), "head": _head(path, config)}
        for url, path in git_mirrors(config, demo_suite=False).items()
    }
    if mirrors:
        info["git_mirrors"] = mirrors
    if config.offline_bundle is not None:
        bundle = OfflineBundle.open(config.offline_bundle)
        info["offline_bundle"] = {"path": str(config.offline_bundle), **bundle.model_dump(mode="json")}
    if config.pip_index is not None:
        info["pip_index"] = config.pip_index
    cutoff = upload_cutoff(config)
    if cutoff is not None:
        info["packages_as_of"] = str(config.packages_as_of)
        info["packages_uploaded_before"] = cutoff.isoformat()
    if config.hf_cache is not None:
        info["hf_cache"] = str(config.hf_cache)
    return info


def _head(path: str, config: SupplySettings) -> str | None:
    """The commit a mirror's HEAD names (a repository or a bundle), or None where git cannot tell."""
    # Read as agent code's clone reads it: mirrors are often another user's, and git's ownership check is
    # relaxed only by protected configuration such as the generated system file (not ``-c`` for upload-pack).
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_SYSTEM": str(git_config_file(config))}
    env.pop("GIT_CONFIG_NOSYSTEM", None)
    try:
        done = subprocess.run(
            ["git", "ls-remote", path, "HEAD"], env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split() if done.returncode == 0 else []
    return words[0] if words else None


__all__ = [
    "BundledRepository",
    "OfflineBundle",
    "base_url",
    "check_mirrors",
    "check_task_pip",
    "describe_supply",
    "git_config_file",
    "git_mirrors",
    "known_upstreams",
    "mirror_problems",
    "pip_environ",
    "read_packages_as_of",
    "release_git_config_dir",
]

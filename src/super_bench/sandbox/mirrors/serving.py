"""Mirrors and time travel: where agent code's ``git clone``, ``pip install`` and Hugging Face
loads are served from, the same in every sandbox.

- git: each mirror (a bare repository, a clone or a git bundle, whoever owns it) stands for one
  URL, with or without ``.git`` and a trailing slash; a directory of mirrors stands for a URL
  prefix; the demo suite's bundles and an offline bundle's are mirrors too. The rules go into a
  generated git system configuration (``GIT_CONFIG_SYSTEM``), which includes the host's own:
  git drops command-line configuration (``GIT_CONFIG_COUNT``) when it runs ``upload-pack`` for a
  local clone, and its ownership check, which refuses another user's repository, is relaxed only
  by protected configuration such as the system file. A repository is served through the pack protocol
  (a ``file://`` URL), never copied file by file as a clone of a local path is: stray files in it (a
  partial clone's ``.promisor``, readable by its owner alone) cannot break a clone. ``preflight``
  checks the mirrors before a run.
- pip: ``--pip-index`` as the only package source, ``--packages-as-of`` as pip's upload-time
  filter, an offline bundle's wheelhouse as the only source when there is no index.
- Hugging Face: a hub cache shared read-only, used offline.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import string
import tempfile
import threading
import urllib.parse
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from super_bench import demo
from super_bench.errors import SandboxError
from super_bench.sandbox.lifetime.scratch import private_temp
from super_bench.sandbox.mirrors.git_repos import base_url, expand_mirrors
from super_bench.sandbox.mirrors.offline_bundle import OfflineBundle

if TYPE_CHECKING:
    from super_bench.sandbox.config import SupplySettings

# The oldest pip with --uploaded-prior-to; older ones ignore PIP_UPLOADED_PRIOR_TO without a word.
PIP_WITH_UPLOAD_FILTER = (26, 0)
HOST_GIT_SYSTEM_CONFIG = "/etc/gitconfig"
# Characters that may continue a repository name: a URL that continues a mirror's URL with one of
# them names another repository ("lab/bert" and "lab/bert-large"), which must not hit the mirror.
_NAME_CHARS = string.ascii_letters + string.digits + "-_."


def git_mirrors(config: SupplySettings, *, demo_suite: bool = True) -> dict[str, str]:
    """Every repository URL agent code gets from a mirror, and the mirror's path; the configured
    mirrors win over an offline bundle's, which win over the demo suite's."""
    mirrors = {}
    if demo_suite:
        mirrors = {base_url(f"{demo.DEMO_URL_PREFIX}{b.stem}"): str(b) for b in sorted(demo.BUNDLES.glob("*.bundle"))}
    if config.offline_bundle is not None:
        mirrors.update(OfflineBundle.open(config.offline_bundle).git_mirrors())
    for url, path in config.git_mirrors.items():
        mirrors.update(expand_mirrors(url, path))
    # Each by its real path, the one an isolating sandbox shows (``mirror_paths``): a mirror given through a
    # symbolic link would otherwise be looked for where agent code sees no link.
    return {url: os.path.realpath(path) for url, path in mirrors.items()}


def git_config_text(mirrors: dict[str, str], bundles: set[str] | None = None) -> str:
    """A git configuration that sends each mirrored URL to its mirror and nothing else there; ``bundles``: the
    mirrors that are bundle files (by default those that are files here: a sandbox may show them elsewhere)."""
    if bundles is None:
        bundles = {path for path in mirrors.values() if os.path.isfile(path)}
    rules: dict[str, str] = {}  # URL prefix -> what it becomes
    for base in mirrors:
        for suffix in ("", ".git"):
            rules.update({base + suffix + c: base + suffix + c for c in _NAME_CHARS})
    for base, path in mirrors.items():
        for suffix in ("", "/", ".git", ".git/"):
            rules[base + suffix] = path if path in bundles else _file_url(path)
    by_target: dict[str, list[str]] = {}
    for prefix, target in sorted(rules.items()):
        by_target.setdefault(target, []).append(prefix)
    lines = [
        "# Written by super-bench: git mirrors for agent code.",
        "[include]",
        f"\tpath = {_quote(HOST_GIT_SYSTEM_CONFIG)}",
    ]
    # Other users' mirrors: git refuses to read a repository its user does not own unless told to.
    # A clone is checked as its work tree, or as its .git when git serves it (upload-pack).
    repositories = sorted({q for p in mirrors.values() if p not in bundles for q in (p, f"{p}/.git")})
    if repositories:
        lines.append("[safe]")
        lines += [f"\tdirectory = {_quote(path)}" for path in repositories]
    for target, prefixes in by_target.items():
        lines.append(f"[url {_quote(target)}]")
        lines += [f"\tinsteadOf = {_quote(p)}" for p in prefixes]
    return "\n".join(lines) + "\n"


def _file_url(path: str) -> str:
    """A repository's ``file://`` URL (git decodes %XX in it, so a path's own "%" is escaped)."""
    return "file://" + urllib.parse.quote(path, safe="/")


def _quote(value: str) -> str:
    if "\n" in value or "\0" in value:
        raise SandboxError(f"a git mirror URL or path cannot contain a line break: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def git_config_file(config: SupplySettings, shown_at: Callable[[str], str] = str) -> Path:
    """The generated git configuration for ``config``, written once under a name that is its digest, in a
    private directory of this process (``git_config_dir``; not in the home: the sandboxes show it).
    ``shown_at``: where agent code sees a mirror's path, in a sandbox that shows it elsewhere."""
    mirrors = git_mirrors(config)
    bundles = {shown_at(path) for path in mirrors.values() if os.path.isfile(path)}
    text = git_config_text({url: shown_at(path) for url, path in mirrors.items()}, bundles)
    path = git_config_dir() / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.gitconfig"
    if path.is_file():
        return path
    try:
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as f:
            f.write(text)
        os.chmod(f.name, 0o644)  # agent code, under a user id of its own, reads it
        os.replace(f.name, path)
    except OSError as e:
        raise SandboxError(f"cannot write the git mirror configuration in {path.parent}: {e}") from e
    return path


_private: Path | None = None
_private_lock = threading.Lock()


def git_config_dir() -> Path:
    """The directory of this process's generated git configurations, removed when it exits."""
    global _private
    with _private_lock:
        if _private is None or not _private.is_dir():
            # Named after this process, so that if it is killed (when atexit does not run) the next removes it.
            _private = private_temp("git")
            # Shown whole to sandboxes whose agent code runs as a user of its own: readable by all, written
            # by none but this process (it holds mirror rules, nothing secret).
            _private.chmod(0o755)
            atexit.register(shutil.rmtree, _private, ignore_errors=True)
        return _private


def release_git_config_dir() -> None:
    """Remove this process's generated git configurations now (a Ray worker, between its tasks); the next
    sandbox makes them again."""
    global _private
    with _private_lock:
        if _private is not None:
            shutil.rmtree(_private, ignore_errors=True)
            _private = None


def upload_cutoff(config: SupplySettings) -> datetime | None:
    """The moment before which packages must have been uploaded: the end of the ``packages_as_of``
    day (UTC) for a date, the moment itself for a date and time."""
    return None if config.packages_as_of is None else cutoff_of(config.packages_as_of)


def cutoff_of(value: date | datetime) -> datetime:
    """The end of ``value``'s day (UTC) for a date; the moment itself for a date and time (UTC if naive)."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    return datetime.combine(value + timedelta(days=1), time(), tzinfo=timezone.utc)


def hub_cache(config: SupplySettings) -> Path | None:
    """The hub cache inside ``hf_cache``: its ``hub`` folder (an ``HF_HOME``), else the folder itself."""
    if config.hf_cache is None:
        return None
    return config.hf_cache / "hub" if (config.hf_cache / "hub").is_dir() else config.hf_cache


def mirror_environ(config: SupplySettings, shown_at: Callable[[str], str] = str) -> dict[str, str]:
    """Environment variables that point agent code's git, pip and Hugging Face at the mirrors; ``shown_at``
    says where agent code sees a host path (a sandbox may show the mirrors elsewhere)."""
    env = {"GIT_CONFIG_SYSTEM": shown_at(str(git_config_file(config, shown_at)))}
    bundle = OfflineBundle.open(config.offline_bundle) if config.offline_bundle is not None else None
    if config.pip_index is not None or (bundle is not None and bundle.wheelhouse is not None):
        # The one package source: the user's pip configuration names others (whose files, when
        # local, would escape the upload-time filter). pip ignores a variable set to "".
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_EXTRA_INDEX_URL="", PIP_FIND_LINKS="", PIP_NO_INDEX="")
        if config.pip_index is not None:
            env["PIP_INDEX_URL"] = config.pip_index
        if bundle is not None and bundle.wheelhouse is not None:
            env["PIP_FIND_LINKS"] = shown_at(str(bundle.wheelhouse))
            if config.pip_index is None:
                env["PIP_NO_INDEX"] = "1"
    cutoff = upload_cutoff(config)
    if cutoff is not None:
        env["PIP_UPLOADED_PRIOR_TO"] = cutoff.isoformat()
    cache = hub_cache(config)
    if cache is not None:
        # Read-only, so nothing can be downloaded into it: offline, models and datasets come from it.
        env.update(
            HF_HUB_CACHE=shown_at(str(cache)),
            HUGGINGFACE_HUB_CACHE=shown_at(str(cache)),
            HF_HUB_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
        )
    return env


def mirror_paths(config: SupplySettings) -> list[str]:
    """Host paths an isolating sandbox shows agent code, read-only (besides ``git_config_dir``)."""
    paths = [str(demo.BUNDLES), *git_mirrors(config).values()]
    if config.offline_bundle is not None:
        paths.append(str(config.offline_bundle))
    if config.hf_cache is not None:
        paths.append(str(config.hf_cache))
    found: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths if os.path.exists(p)}):
        if not any(path.startswith(f.rstrip("/") + "/") for f in found):
            found.append(path)  # a path under one already shown is shown with it
    return found


def check_readable_by_all(config: SupplySettings) -> None:
    """Refuse mirrors that agent code running as a user of its own could not read (checked at their top)."""
    paths = [str(p) for p in config.git_mirrors.values()]
    paths += [str(p) for p in (config.hf_cache, config.offline_bundle) if p is not None]
    for path in paths:
        mode = os.stat(path).st_mode
        if mode & (0o005 if os.path.isdir(path) else 0o004) != (0o005 if os.path.isdir(path) else 0o004):
            raise SandboxError(
                f"{path} is not readable by other users, and agent code runs as a user of its own here: "
                f"make it readable with chmod -R a+rX {path}"
            )


def check_task_pip(config: SupplySettings, pip_version_output: str, python: str, *, upgradable: bool = True) -> None:
    """Refuse a task Python whose pip would ignore ``packages_as_of`` (``pip --version``'s output given).
    ``python``: what the user can name (never a path inside a sandbox); ``upgradable``: whether upgrading its
    pip is advice they can follow (else the package cache and --task-python are)."""
    if config.packages_as_of is None:
        return
    words = pip_version_output.split()
    version = words[1] if len(words) > 1 and words[0] == "pip" else ""
    try:
        found = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        found = ()
    if found < PIP_WITH_UPLOAD_FILTER:
        have = f"pip {version}" if version else "no working pip"
        needed = ".".join(map(str, PIP_WITH_UPLOAD_FILTER))
        head = (
            f"--packages-as-of needs pip {needed} or newer in the task Python where tasks install without the "
            f"package cache ({python} has {have}, which would install today's packages)"
        )
        if upgradable:
            fix = f"upgrade it with: {python} -m pip install 'pip>={PIP_WITH_UPLOAD_FILTER[0]}', or give another with"
            raise SandboxError(f"{head}; {fix} --task-python")
        raise SandboxError(
            f"{head}; leave the package cache on (it applies the date for any pip: drop --package-cache off), or give "
            f"a task Python with pip {PIP_WITH_UPLOAD_FILTER[0]} or newer with --task-python"
        )

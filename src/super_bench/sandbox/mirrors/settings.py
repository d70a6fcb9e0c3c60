"""The mirror settings of ``SandboxConfig``, checked where they are given: URLs that name repositories,
mirror paths that exist and hold repositories, a date pip can use, directories that are what they claim."""

from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from super_bench.errors import SandboxError
from super_bench.sandbox.mirrors.git_repos import expand_mirrors

_REPO_URL = re.compile(r"^([a-z][a-z0-9+.-]*://[^/\s]+/|[^@/\s]+@[^:/\s]+:)\S*$")


def _existing(path: Path, what: str) -> Path:
    """``path`` made absolute (agent code runs elsewhere), after checking that it exists."""
    full = path.expanduser().absolute()
    if not full.exists():
        raise ValueError(f"{what}: {path} does not exist")
    return full


def _mirrors(value: dict[str, Path]) -> dict[str, Path]:
    mirrors = {}
    for url, path in value.items():
        if not _REPO_URL.match(url):
            raise ValueError(f"git mirror {url!r}: not a repository URL (write it like https://github.com/OWNER/NAME)")
        mirrors[url] = _existing(path, f"git mirror for {url}")
        try:
            expand_mirrors(url, mirrors[url])  # a directory without repositories is a mistake to name now
        except SandboxError as e:
            raise ValueError(str(e)) from None
    return mirrors


def _directory(what: str) -> Any:
    def check(value: Path | None) -> Path | None:
        if value is None:
            return None
        path = _existing(value, what)
        if not path.is_dir():
            raise ValueError(f"{what}: {value} is not a directory")
        return path

    return check


def _offline_bundle(value: Path | None) -> Path | None:
    from super_bench.sandbox.mirrors.offline_bundle import OfflineBundle

    path: Path | None = _directory("offline bundle")(value)
    if path is not None:
        try:
            OfflineBundle.open(path)
        except SandboxError as e:
            raise ValueError(str(e)) from None
    return path


def _index(value: str | None) -> str | None:
    if value is not None and not re.match(r"(https?|file)://", value):
        raise ValueError(f"pip index {value!r}: not a URL (write it like http://127.0.0.1:3141/simple)")
    return value


def _as_of(value: Any) -> Any:
    return read_packages_as_of(value) if isinstance(value, str) else value


def read_packages_as_of(value: str) -> date | datetime:
    """A date (``2024-03-01``) or a date and time (``2024-03-01T12:00:00Z``); ValueError saying how to write it."""
    text = value.strip()
    try:
        # fromisoformat reads a trailing Z only from Python 3.11 on.
        return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(re.sub("Z$", "+00:00", text))
    except ValueError:
        raise ValueError(f"packages as of {value!r}: not a date (write it like 2024-03-01)") from None


GitMirrorMap = Annotated[dict[str, Path], AfterValidator(_mirrors)]
PipIndexUrl = Annotated[str | None, AfterValidator(_index)]
PackagesAsOf = Annotated[date | datetime | None, BeforeValidator(_as_of)]
HfCacheDir = Annotated[Path | None, AfterValidator(_directory("hf cache"))]
OfflineBundleDir = Annotated[Path | None, AfterValidator(_offline_bundle)]

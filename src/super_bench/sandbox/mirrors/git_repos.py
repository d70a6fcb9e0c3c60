"""Git repositories and bundles on disk, named by the URLs they stand for: one mirror, or a
directory of them (``PATH/owner/name[.git|.bundle]`` for ``URL/owner/name``)."""

from __future__ import annotations

from pathlib import Path

from super_bench.errors import SandboxError

# How deep a directory of mirrors is searched for repositories (host/owner/name is three).
_MAX_DEPTH = 4


def repository_kind(path: Path) -> str | None:
    """``bundle``, ``bare``, ``clone`` or None (not a git repository or bundle)."""
    if path.is_file():
        with open(path, "rb") as f:
            return "bundle" if f.read(16).startswith((b"# v2 git bundle", b"# v3 git bundle")) else None
    if (path / ".git").exists():
        return "clone"
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return "bare"
    return None


def expand_mirrors(url: str, path: Path) -> dict[str, str]:
    """Repository URL -> local path, for one ``--git-mirror URL=PATH``: the repository itself, or
    each repository under a directory of mirrors (``PATH/owner/name[.git|.bundle]`` for ``URL/owner/name``)."""
    if repository_kind(path) is not None:
        return {base_url(url): str(path)}
    if not path.is_dir():
        raise SandboxError(f"git mirror for {url}: {path} is not a git repository, a git bundle or a directory")
    found: dict[str, str] = {}
    _walk(url.rstrip("/") + "/", path, path, found)
    if not found:
        raise SandboxError(
            f"git mirror for {url}: {path} holds no git repository or bundle "
            f"(searched {_MAX_DEPTH} directories deep, e.g. {path}/OWNER/NAME.git or NAME.bundle)"
        )
    return found


def _walk(prefix: str, root: Path, directory: Path, found: dict[str, str]) -> None:
    if len(directory.relative_to(root).parts) >= _MAX_DEPTH:
        return
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith("."):
            continue
        if repository_kind(entry) is not None:
            name = entry.relative_to(root).as_posix().removesuffix(".bundle")
            found.setdefault(base_url(prefix + name), str(entry))
        elif entry.is_dir() and not entry.is_symlink():
            _walk(prefix, root, entry, found)


def base_url(url: str) -> str:
    """The URL without a trailing slash or ``.git``, as hosting sites name a repository either way."""
    return url.rstrip("/").removesuffix(".git")

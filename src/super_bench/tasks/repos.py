"""A task's git repository, read without running anything: which commits and files it has.

Repositories are cloned (bare, and without file contents where the server allows it) into a
temporary directory, once per URL. The demo suite's ``https://github.com/super-bench-demo/``
URLs are served from the bundled git bundles, so they work offline, as in the sandboxes.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from super_bench import demo
from super_bench.errors import SuperBenchError, TaskSourceError
from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.supply import git_config_file

GIT_TIMEOUT = 600.0


def git(*args: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT, mirrors: SandboxConfig | None = None) -> str:
    """Run git (never asking for credentials); returns stdout. Mirrored URLs (the demo suite's, and
    those of ``mirrors``' git mirrors and offline bundle) are served from their mirrors, as in the sandboxes."""
    if shutil.which("git") is None:
        raise TaskSourceError("git is not installed; it is needed to read task repositories")
    try:
        config = git_config_file(mirrors or SandboxConfig())
    except SuperBenchError as e:
        raise TaskSourceError(str(e)) from e
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "GIT_CONFIG_SYSTEM": str(config)}
    env.pop("GIT_CONFIG_NOSYSTEM", None)
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TaskSourceError(f"git {' '.join(args[:2])} took more than {timeout:g} s") from e
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines() or [f"exit status {done.returncode}"]
        message = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1])
        raise TaskSourceError(f"git {' '.join(args[:2])} failed: {message}")
    return done.stdout


def is_remote(source: str) -> bool:
    """A URL (``https://``, ``ssh://``, ``git@host:...``), as opposed to a local path."""
    return "://" in source or (source.startswith("git@") and ":" in source)


def available_offline(source: str) -> bool:
    """Whether the repository can be read without the network: a local path or a demo URL."""
    return not is_remote(source) or source.startswith(demo.DEMO_URL_PREFIX)


def clone(
    source: str, dest: Path, *, bare: bool = False, full: bool = False, mirrors: SandboxConfig | None = None
) -> Path:
    """Clone ``source`` (a URL or a local path) into ``dest``; returns ``dest``. A bare clone is
    without file contents (fetched when read) unless ``full``."""
    options = (["--bare"] if full else ["--bare", "--filter=blob:none"]) if bare else ["--quiet"]
    # "--": a task file's repository could be "--upload-pack=<command>"; it must never be read as an option.
    git("clone", "--quiet", *options, "--", source, str(dest), mirrors=mirrors)
    return dest


def resolve_commit(repo: Path, commit: str | None) -> str:
    """The full id of ``commit`` (a full or abbreviated id, a branch, a tag; HEAD when None)."""
    try:
        revision = f"{commit or 'HEAD'}^{{commit}}"
        return git("rev-parse", "--verify", "--quiet", "--end-of-options", revision, cwd=repo).strip()
    except TaskSourceError:
        raise TaskSourceError(f"commit {commit} is not in the repository") from None


def list_files(repo: Path, commit: str) -> list[str]:
    """Every file path in the tree of ``commit``."""
    return git("ls-tree", "-r", "--name-only", "-z", "--end-of-options", commit, cwd=repo).strip("\0").split("\0")


def find_files(files: list[str], path: str) -> list[str]:
    """The repository files that ``path`` names: the path itself, else every file whose path ends with it
    (``train.py`` names ``src/train.py``), as the entrypoint metric matches scripts."""
    wanted = posixpath.normpath(path.strip().removeprefix("./"))
    return [wanted] if wanted in files else [f for f in files if f.endswith("/" + wanted)]


class RepoCache:
    """Bare clones of repositories, one per URL, in a temporary directory removed on exit."""

    def __init__(self, mirrors: SandboxConfig | None = None) -> None:
        self.mirrors = mirrors
        self._root = Path(tempfile.mkdtemp(prefix="super-bench-repos-"))
        self._repos: dict[str, Path | TaskSourceError] = {}

    def get(self, source: str) -> Path:
        """The bare clone of ``source``; a repository that cannot be cloned raises the same error each time."""
        if source not in self._repos:
            try:
                self._repos[source] = clone(source, self._root / str(len(self._repos)), bare=True, mirrors=self.mirrors)
            except TaskSourceError as e:
                self._repos[source] = TaskSourceError(f"cannot clone {source}: {e}")
        found = self._repos[source]
        if isinstance(found, TaskSourceError):
            raise found
        return found

    def close(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> RepoCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

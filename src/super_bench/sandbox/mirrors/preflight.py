"""The mirror pre-flight: every git mirror a run serves, checked once before its first task, so that a
mirror agent code cannot clone fails the run up front with the mirror, the file and the fix named, rather
than each task's ``git clone`` failing in a way that costs the agent the task.

A mirror fails the check when:
- agent code, running as a user of its own (bwrap run by root), could not read a file or folder that git
  reads to serve a clone through the pack protocol: ``HEAD``, ``config``, ``packed-refs``, ``shallow``,
  ``refs/`` and ``objects/`` (a pack's ``.promisor`` and ``.keep`` markers are only looked for, never read,
  so a partial clone's root-only ``.promisor`` is no problem); a bundle must be readable itself;
- objects reachable from its HEAD, branches and tags, or from a task's pinned commit, are missing (a partial
  clone, a damaged copy): ``git upload-pack`` would fail half-way through the agent's clone;
- a task's pinned commit is not in it;
- it is a bundle that needs commits it does not hold (an incremental bundle).
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from super_bench.errors import SandboxError
from super_bench.sandbox.mirrors.git_repos import base_url, repository_kind
from super_bench.sandbox.mirrors.serving import git_mirrors

if TYPE_CHECKING:
    from super_bench.sandbox.config import SupplySettings

# What git reads of a repository to serve it through the pack protocol (upload-pack, pack-objects).
_SERVED = ("HEAD", "config", "packed-refs", "shallow", "refs", "objects")
# Files git only looks for: a pack's markers (partial clones keep theirs readable by their owner alone).
_MARKERS = (".promisor", ".keep")
_SHOWN = 5  # files or objects named in a message; the rest are counted
GIT_TIMEOUT = 600.0


def mirror_problems(
    config: SupplySettings, commits: Mapping[str, Collection[str]] | None = None, *, other_user: bool = False
) -> list[str]:
    """Why each git mirror of ``config`` (its own and its offline bundle's) could not serve a clone to agent code.

    ``commits``: repository URL -> the commits tasks pin there; ``other_user``: agent code runs as a user of
    its own, who reads only what all users may read.
    """
    pinned = {base_url(url): list(found) for url, found in (commits or {}).items()}
    problems = []
    for url, path in git_mirrors(config, demo_suite=False).items():
        found = _problems(Path(path), pinned.get(url, []), other_user)
        problems += [f"git mirror for {url} ({path}): {problem}" for problem in found]
    return problems


def check_mirrors(
    config: SupplySettings, commits: Mapping[str, Collection[str]] | None = None, *, other_user: bool = False
) -> None:
    """Raise one ``SandboxError`` listing every mirror problem (see ``mirror_problems``)."""
    problems = mirror_problems(config, commits, other_user=other_user)
    if problems:
        raise SandboxError("git mirrors agent code could not clone:\n" + "\n".join(f"- {p}" for p in problems))


def _problems(path: Path, commits: list[str], other_user: bool) -> list[str]:
    kind = repository_kind(path)
    if kind == "bundle":
        if other_user and not _readable_by_all(path):
            return [f"it is not readable by other users, and agent code runs as a user of its own here: {_fix(path)}"]
        return _bundle_problems(path)
    git_dir = path / ".git" if kind == "clone" else path
    if not git_dir.is_dir():
        return []  # a linked work tree (.git is a file): served from the repository it points to
    problems = []
    if other_user:
        unreadable = _unreadable(git_dir)
        if unreadable:
            named = ", ".join(str(p.relative_to(path)) for p in unreadable[:_SHOWN])
            more = f" and {len(unreadable) - _SHOWN} more" if len(unreadable) > _SHOWN else ""
            problems.append(f"agent code runs as a user of its own here and cannot read {named}{more}: {_fix(path)}")
    found = []
    for commit in commits:
        full = _git(git_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}")
        if full.returncode != 0:
            problems.append(f"the commit a task pins, {commit}, is not in it: update the mirror (git fetch)")
        else:
            found.append(full.stdout.strip())
    missing = _missing_objects(git_dir, found)
    if missing:
        shown = ", ".join(missing[:_SHOWN]) + (f" and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else "")
        problems.append(
            f"{len(missing)} object(s) a clone needs are missing (reachable from HEAD, its branches and tags, or a "
            f"pinned commit: {shown}); it is a partial or damaged clone: fetch them where its origin is reachable "
            f"(git -C {path} fetch --refetch origin), or make a complete mirror (git clone --mirror URL)"
        )
    return problems


def _missing_objects(git_dir: Path, commits: list[str]) -> list[str]:
    """The objects reachable from the refs a clone fetches (and ``commits``) that the repository lacks."""
    # --missing=print lists what is absent instead of fetching it from a partial clone's promisor remote.
    refs = ["HEAD", "--branches", "--tags", *commits]
    done = _git(git_dir, "rev-list", "--objects", "--missing=print", "--ignore-missing", *refs)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise SandboxError(f"git mirror {git_dir}: git cannot read it ({lines[-1]})")
    return [line[1:] for line in done.stdout.splitlines() if line.startswith("?")]


def _bundle_problems(path: Path) -> list[str]:
    """A bundle that needs commits of the repository it is unbundled into cannot be cloned."""
    prerequisites = []
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                break  # the header ends at a blank line, where the pack begins
            if line.startswith(b"-"):
                prerequisites.append(line[1:].split()[0].decode("ascii", "replace"))
    if not prerequisites:
        return []
    return [
        f"it is an incremental bundle that needs {len(prerequisites)} commit(s) it does not hold "
        f"({', '.join(prerequisites[:_SHOWN])}): make a complete one (git bundle create FILE --all)"
    ]


def _unreadable(git_dir: Path) -> list[Path]:
    """What git serves from ``git_dir`` that other users cannot read (folders: read and enter)."""
    found = []
    for name in _SERVED:
        top = git_dir / name
        if not top.exists():
            continue
        if not _readable_by_all(top):
            found.append(top)
            continue
        if not top.is_dir():
            continue
        for directory, folders, files in os.walk(top):
            for entry in [*folders, *files]:
                full = Path(directory, entry)
                if not entry.endswith(_MARKERS) and not _readable_by_all(full):
                    found.append(full)
            folders[:] = [d for d in folders if Path(directory, d) not in found]
    return found


def _readable_by_all(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return True  # its target is checked where it lies, if it lies in what git serves
    wanted = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & wanted == wanted


def _fix(path: Path) -> str:
    return f"make it readable by all with: chmod -R a+rX {path}"


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Mirrors are often another user's: the ownership check is lifted for this read (command-line
    # configuration is trusted as the system's is). Nothing is fetched: a partial clone lists what it lacks.
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}
    command = ["git", "-c", "safe.directory=*", f"--git-dir={git_dir}", *args]
    try:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        raise SandboxError(f"git mirror {git_dir}: checking it took more than {GIT_TIMEOUT:g} s") from e

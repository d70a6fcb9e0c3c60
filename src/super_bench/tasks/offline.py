"""Making an offline bundle (``super-bench mirror``): each task repository as a git bundle with HEAD
at the task's commit, and optionally a wheelhouse of what the gold solutions ``pip install``.
The format is ``OfflineBundle``'s (``super_bench.sandbox.supply``)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from super_bench.errors import SandboxError, TaskSourceError
from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.supply import BundledRepository, OfflineBundle, check_task_pip, pip_environ
from super_bench.tasks.model import Task
from super_bench.tasks.repos import clone, find_files, git, list_files, resolve_commit

# A pip install in a cell: `!pip install ...`, `%pip install ...`, `!python -m pip install ...`.
_PIP_INSTALL = re.compile(r"^\s*[!%]\s*(?:python[\d.]*\s+-m\s+)?pip[\d.]*\s+install\s+(?P<args>.+)$", re.M)
# pip options that take a value: the value is not a requirement.
_VALUED = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "-t", "--target"}
_PIP_TIMEOUT = 3600.0


@dataclass
class Requirements:
    """What one task's gold solution installs with pip."""

    specifiers: list[str]
    files: list[Path]  # requirements files taken from the repository
    skipped: list[str]  # what cannot be fetched ahead (local paths, editable installs)


def bundle_path(url: str) -> str:
    """Where a repository's bundle goes: ``git/<host>/<path>.bundle``."""
    match = re.match(r"^(?:[a-z][a-z0-9+.-]*://(?:[^@/]+@)?|[^@/]+@)(?P<host>[^/:]+)[:/](?P<path>.+)$", url)
    if match is None:
        raise TaskSourceError(f"{url} is not a repository URL")
    parts = [p for p in match.group("path").rstrip("/").removesuffix(".git").split("/") if p]
    if not parts or any(p in (".", "..") or not re.fullmatch(r"[\w.-]+", p) for p in [match.group("host"), *parts]):
        raise TaskSourceError(f"{url}: cannot make a file name of it")
    return "/".join(["git", match.group("host"), *parts]) + ".bundle"


def bundle_repository(url: str, commits: list[str], out: Path, workdir: Path, mirrors: SandboxConfig) -> list[str]:
    """Write the git bundle of ``url`` with HEAD at the first commit (and the other commits kept);
    returns the full commit ids."""
    repo = clone(url, workdir / "repo.git", bare=True, full=True, mirrors=mirrors)
    full = [resolve_commit(repo, c) for c in commits] or [resolve_commit(repo, None)]
    branch = git("symbolic-ref", "HEAD", cwd=repo).strip() or "refs/heads/main"
    git("update-ref", branch, full[0], cwd=repo)
    refs = ["HEAD", branch]
    for sha in full[1:]:
        git("update-ref", f"refs/tags/super-bench/{sha}", sha, cwd=repo)
        refs.append(f"refs/tags/super-bench/{sha}")
    out.parent.mkdir(parents=True, exist_ok=True)
    git("bundle", "create", "--quiet", str(out), *refs, cwd=repo)
    return full


def solution_requirements(task: Task, repo: Path | None, workdir: Path) -> Requirements:
    """The pip requirements of a task's gold solution; ``-r FILE`` is read from the repository
    (``repo``: a clone), found by its path's ending as the entrypoint metric finds scripts."""
    found = Requirements([], [], [])
    for action in task.solution:
        if action.type != "execute":
            continue
        for match in _PIP_INSTALL.finditer(str(action.content or "")):
            try:
                words = shlex.split(match.group("args").split("#")[0].split("&&")[0])
            except ValueError:
                found.skipped.append(f"{match.group(0).strip()}: not a pip command that can be read (quoting)")
                continue
            _read_args(words, task, repo, workdir, found)
    return found


def _read_args(words: list[str], task: Task, repo: Path | None, workdir: Path, found: Requirements) -> None:
    it = iter(words)
    for word in it:
        if word in ("-r", "--requirement"):
            _requirement_file(next(it, ""), task, repo, workdir, found)
        elif word in ("-e", "--editable"):
            found.skipped.append(f"-e {next(it, '')}: an editable install, built from the repository when it runs")
        elif word in _VALUED:
            next(it, None)
        elif word.startswith("-"):
            continue
        elif word.startswith((".", "/")) or "/" in word.split("@")[0]:
            # a local path: part of the repository, built at install time
            found.skipped.append(f"{word}: a local path of the repository, built from it when it runs")
        else:
            found.specifiers.append(word)


def _requirement_file(path: str, task: Task, repo: Path | None, workdir: Path, found: Requirements) -> None:
    if repo is None or not path:
        found.skipped.append(f"-r {path}: a requirements file, and the task has no repository to read it from")
        return
    commit = resolve_commit(repo, task.git_commit)
    files = list_files(repo, commit)
    # `-r NAME/requirements.txt` after cloning into NAME: the path inside the repository is its tail.
    matches = find_files(files, path) or find_files(files, path.split("/", 1)[-1])
    if len(matches) != 1:
        found.skipped.append(
            f"-r {path}: {len(matches)} files of the repository match its path, so which one it means is not known"
        )
        return
    target = workdir / f"requirements-{len(found.files)}.txt"
    target.write_text(git("show", f"{commit}:{matches[0]}", cwd=repo), encoding="utf-8")
    found.files.append(target)


def fetch_wheels(requirements: Requirements, wheels: Path, python: str, mirrors: SandboxConfig) -> None:
    """Build or download wheels of the requirements (and their dependencies) into ``wheels``."""
    if not requirements.specifiers and not requirements.files:
        return
    command = [python, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(wheels), *requirements.specifiers]
    for file in requirements.files:
        command += ["-r", str(file)]
    env = pip_environ(mirrors)  # pip's index, date and sources as agent code's pip gets them
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_PIP_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as e:
        raise TaskSourceError(f"pip wheel took more than {_PIP_TIMEOUT:g} s") from e
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines() or [f"exit status {done.returncode}"]
        error = next((line for line in lines if line.startswith("ERROR:")), lines[-1])
        raise TaskSourceError(f"pip wheel failed: {error}")


def make_offline_bundle(
    tasks: list[Task],
    out: Path,
    *,
    mirrors: SandboxConfig | None = None,
    wheels: bool = False,
    python: str | None = None,
) -> OfflineBundle:
    """Bundle what ``tasks`` fetch from the network into ``out``; what fails is listed in ``problems``.

    ``mirrors``: where repositories are cloned from (its git mirrors), and for the wheels the package
    index and date (``pip_index``, ``packages_as_of``). ``python``: the interpreter whose pip fetches
    the wheels, and for whose version and platform (default: this one).
    """
    from super_bench._version import __version__

    mirrors = mirrors or SandboxConfig()
    python = python or sys.executable
    out = out.resolve()  # git writes the bundles from inside the clones
    if wheels:
        _check_pip(mirrors, python)
    out.mkdir(parents=True, exist_ok=True)
    by_url: dict[str, list[Task]] = {}
    for task in tasks:
        if task.github_repo:
            by_url.setdefault(task.github_repo, []).append(task)
    bundle = OfflineBundle(
        created_at=datetime.now().astimezone(),
        super_bench_version=__version__,
        tasks=[t.task_id for t in tasks],
        repositories=[],
        wheels="wheels" if wheels else None,
        packages_as_of=mirrors.packages_as_of,
        pip_index=mirrors.pip_index,
        root=out,
    )
    if wheels:
        (out / "wheels").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="super-bench-mirror-") as tmp:
        for i, (url, repo_tasks) in enumerate(by_url.items()):
            workdir = Path(tmp) / str(i)
            workdir.mkdir()
            ids = [t.task_id for t in repo_tasks]
            commits = list(dict.fromkeys(t.git_commit for t in repo_tasks if t.git_commit))
            try:
                relative = bundle_path(url)
                full = bundle_repository(url, commits, out / relative, workdir, mirrors)
                bundle.repositories.append(BundledRepository(url=url, bundle=relative, commits=full, tasks=ids))
            except TaskSourceError as e:
                bundle.problems.append(f"{url} ({', '.join(ids)}): {e}")
                continue
            if wheels:
                for task in repo_tasks:
                    _task_wheels(task, workdir / "repo.git", out / "wheels", python, mirrors, bundle)
        if wheels:
            for task in tasks:
                if not task.github_repo:
                    _task_wheels(task, None, out / "wheels", python, mirrors, bundle)
    bundle.write()
    return bundle


def _task_wheels(
    task: Task, repo: Path | None, wheels: Path, python: str, mirrors: SandboxConfig, bundle: OfflineBundle
) -> None:
    with tempfile.TemporaryDirectory(prefix="super-bench-reqs-") as tmp:
        try:
            requirements = solution_requirements(task, repo, Path(tmp))
            fetch_wheels(requirements, wheels, python, mirrors)
        except TaskSourceError as e:
            bundle.problems.append(f"{task.task_id}: wheels: {e}")
            return
    bundle.skipped += [f"{task.task_id}: {item}" for item in requirements.skipped]


def _check_pip(mirrors: SandboxConfig, python: str) -> None:
    try:
        version = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    if not version:
        raise SandboxError(f"{python} has no working pip, which the wheels are fetched with")
    check_task_pip(mirrors, version, python)

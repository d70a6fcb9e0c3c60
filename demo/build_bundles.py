"""Build the demo repositories' git bundles from their sources in demo/.

Each directory under demo/repos/ is the tree of the commit its tasks are pinned to. It becomes a
git repository with a fixed author and date, so its commit ids depend on its content alone:

- wheels listed in WHEELS are assembled from demo/wheels/<dist>-<version>/ (a package directory
  and its METADATA) and committed inside the tree, as a repository that ships a dependency
  which is not on PyPI would;
- demo/updates/<repo>.patch, if present, holds later commits (``git format-patch`` output)
  applied with ``git am`` on top of the pinned one, so the default branch moves past it and
  checking out the pinned commit matters.

The bundles (what ``git clone`` reads offline) go to src/super_bench/demo/bundles/, the pinned
commit ids to commits.json there.

    python demo/build_bundles.py          # rebuild every bundle
    python demo/build_bundles.py --check  # exit 1 if a bundle is out of date with its sources
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "repos"
WHEEL_SOURCES = HERE / "wheels"
UPDATES = HERE / "updates"
BUNDLES = HERE.parent / "src" / "super_bench" / "demo" / "bundles"
IDENTITY = {
    "GIT_AUTHOR_NAME": "SUPER demo authors",
    "GIT_AUTHOR_EMAIL": "demo@super-bench.invalid",
    "GIT_AUTHOR_DATE": "2024-03-01T12:00:00+00:00",
    "GIT_COMMITTER_NAME": "SUPER demo authors",
    "GIT_COMMITTER_EMAIL": "demo@super-bench.invalid",
    "GIT_COMMITTER_DATE": "2024-03-01T12:00:00+00:00",
}
# repository -> (folder in the repository, wheel source under demo/wheels/)
WHEELS = {
    "nbsent": ("vendor", "polartok-0.3.1"),
    "textrank": ("wheels", "rougekit-1.0.2"),
}
ZIP_DATE = (2024, 3, 1, 12, 0, 0)


def git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def build_wheel(source: Path, target_dir: Path) -> Path:
    """A pure-Python wheel of ``source`` (``<dist>-<version>/``), byte-for-byte reproducible."""
    dist, version = source.name.rsplit("-", 1)
    info = f"{dist}-{version}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.name != "METADATA" and "__pycache__" not in path.parts:
            files[path.relative_to(source).as_posix()] = path.read_bytes()
    files[f"{info}/METADATA"] = (source / "METADATA").read_bytes()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: super-bench-demo\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = "".join(f"{name},{_record_hash(data)}\n" for name, data in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    wheel = target_dir / f"{dist}-{version}-py3-none-any.whl"
    target_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, ZIP_DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return wheel


def build(source: Path, bundle: Path | None) -> tuple[str, str]:
    """Commit ``source`` (and its later commits) into a fresh repository; write its bundle.

    Returns the pinned commit id and the id of the default branch's head.
    """
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / source.name
        shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "results"))
        if source.name in WHEELS:
            folder, wheel_source = WHEELS[source.name]
            build_wheel(WHEEL_SOURCES / wheel_source, repo / folder)
        git(["init", "-q", "-b", "main"], repo)
        git(["add", "-A"], repo)
        git(["commit", "-q", "-m", f"{source.name}: code and data for the paper"], repo)
        pinned = git(["rev-parse", "HEAD"], repo).strip()
        patch = UPDATES / f"{source.name}.patch"
        if patch.exists():
            git(["am", "-q", "--committer-date-is-author-date", str(patch)], repo)
        head = git(["rev-parse", "HEAD"], repo).strip()
        if bundle is not None:
            git(["bundle", "create", "-q", str(bundle), "--all"], repo)
        return pinned, head


def bundle_head(bundle: Path) -> str | None:
    if not bundle.exists():
        return None
    heads = dict(reversed(line.split()) for line in git(["bundle", "list-heads", str(bundle)], HERE).splitlines())
    return heads.get("refs/heads/main")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that the bundles are up to date")
    args = parser.parse_args()
    commits_path = BUNDLES / "commits.json"
    recorded = json.loads(commits_path.read_text()) if commits_path.exists() else {}
    commits = {}
    stale = []
    for source in sorted(p for p in SOURCES.iterdir() if p.is_dir()):
        bundle = BUNDLES / f"{source.name}.bundle"
        if args.check:
            commits[source.name], head = build(source, None)
            if recorded.get(source.name) != commits[source.name] or bundle_head(bundle) != head:
                stale.append(source.name)
        else:
            BUNDLES.mkdir(parents=True, exist_ok=True)
            commits[source.name], head = build(source, bundle)
            later = f" (main at {head})" if head != commits[source.name] else ""
            print(f"{source.name}: {commits[source.name]}{later}")
    if args.check:
        if stale or set(recorded) != set(commits):
            print(f"out of date: {', '.join(stale) or 'the set of repositories'}; run python demo/build_bundles.py")
            return 1
        print(f"{len(commits)} bundle(s) up to date")
        return 0
    for old in set(BUNDLES.glob("*.bundle")) - {BUNDLES / f"{name}.bundle" for name in commits}:
        old.unlink()
    commits_path.write_text(json.dumps(commits, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

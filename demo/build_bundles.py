"""Build the demo repositories' git bundles from their sources in demo/repos/.

Each directory under demo/repos/ becomes a one-commit git repository with a fixed author
and date, so its commit id depends on its content alone. The bundles (what `git clone`
reads offline) go to src/super_bench/demo/bundles/, their commit ids to commits.json there.

    python demo/build_bundles.py          # rebuild every bundle
    python demo/build_bundles.py --check  # exit 1 if a bundle is out of date with its sources
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "repos"
BUNDLES = HERE.parent / "src" / "super_bench" / "demo" / "bundles"
IDENTITY = {
    "GIT_AUTHOR_NAME": "SUPER demo authors",
    "GIT_AUTHOR_EMAIL": "demo@super-bench.invalid",
    "GIT_AUTHOR_DATE": "2024-03-01T12:00:00+00:00",
    "GIT_COMMITTER_NAME": "SUPER demo authors",
    "GIT_COMMITTER_EMAIL": "demo@super-bench.invalid",
    "GIT_COMMITTER_DATE": "2024-03-01T12:00:00+00:00",
}


def git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def build(source: Path, bundle: Path | None) -> str:
    """Commit ``source`` into a fresh repository; write its bundle; return the commit id."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / source.name
        shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "results"))
        git(["init", "-q", "-b", "main"], repo)
        git(["add", "-A"], repo)
        git(["commit", "-q", "-m", f"{source.name}: code and data for the paper"], repo)
        commit = git(["rev-parse", "HEAD"], repo).strip()
        if bundle is not None:
            git(["bundle", "create", "-q", str(bundle), "--all"], repo)
        return commit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that the bundles are up to date")
    args = parser.parse_args()
    commits_path = BUNDLES / "commits.json"
    recorded = json.loads(commits_path.read_text()) if commits_path.exists() else {}
    commits = {}
    stale = []
    for source in sorted(p for p in SOURCES.iterdir() if p.is_dir()):
        if args.check:
            commits[source.name] = build(source, None)
            if recorded.get(source.name) != commits[source.name] or not (BUNDLES / f"{source.name}.bundle").exists():
                stale.append(source.name)
        else:
            BUNDLES.mkdir(parents=True, exist_ok=True)
            commits[source.name] = build(source, BUNDLES / f"{source.name}.bundle")
            print(f"{source.name}: {commits[source.name]}")
    if args.check:
        if stale or set(recorded) != set(commits):
            print(f"out of date: {', '.join(stale) or 'the set of repositories'}; run python demo/build_bundles.py")
            return 1
        print(f"{len(commits)} bundle(s) up to date")
        return 0
    commits_path.write_text(json.dumps(commits, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

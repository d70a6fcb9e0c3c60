"""The bundled offline demo suite: tasks in ``demo/tasks/*.jsonl`` and the git bundles of
their mini research repositories in ``demo/bundles/``.

Tasks clone ``https://github.com/super-bench-demo/<name>``; every sandbox rewrites that URL
prefix to the bundled copy, so the clone works offline and looks like the real thing.
"""

from __future__ import annotations

from pathlib import Path

DEMO_URL_PREFIX = "https://github.com/super-bench-demo/"
BUNDLES = Path(__file__).resolve().parent / "bundles"
TASKS = Path(__file__).resolve().parent / "tasks"


def git_url_rewrites() -> dict[str, str]:
    """URL prefix -> local path, for ``git config url.<local>.insteadOf <prefix>``."""
    rewrites = {DEMO_URL_PREFIX: f"{BUNDLES}/"}
    for bundle in BUNDLES.glob("*.bundle"):
        # "<name>.git" URLs too; git resolves "<dir>/<name>" to "<name>.bundle" by itself.
        rewrites[f"{DEMO_URL_PREFIX}{bundle.stem}.git"] = str(bundle)
    return rewrites

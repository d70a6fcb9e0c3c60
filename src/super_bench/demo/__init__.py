"""The bundled offline demo suite: tasks in ``demo/tasks/*.jsonl`` and the git bundles of
their mini research repositories in ``demo/bundles/``.

Tasks clone ``https://github.com/super-bench-demo/<name>``; every sandbox serves those URLs from
the bundled copies (as git mirrors), so the clone works offline and looks like the real thing.
"""

from __future__ import annotations

from pathlib import Path

DEMO_URL_PREFIX = "https://github.com/super-bench-demo/"
BUNDLES = Path(__file__).resolve().parent / "bundles"
TASKS = Path(__file__).resolve().parent / "tasks"

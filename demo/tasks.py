"""The demo suite's task files: writes src/super_bench/demo/tasks/{expert,masked,auto}.jsonl.

The tasks are defined in taskdefs/, one module per repository of demo/repos/.

    python demo/tasks.py           # regenerate the task files
    python demo/tasks.py --check   # exit 1 if the task files are out of date

Gold answers are recorded by hand in the definitions and proven by the gold agent in the test suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from taskdefs import MODULES

OUT = Path(__file__).resolve().parent.parent / "src" / "super_bench" / "demo" / "tasks"


def render() -> dict[str, str]:
    files = {}
    for name in ("expert", "masked", "auto"):
        rows = [row for module in MODULES for row in getattr(module, name.upper())]
        files[name] = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, text in render().items():
        path = OUT / f"{name}.jsonl"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date: {', '.join(stale)}; run python demo/tasks.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The watchdog process (see ``supervisor``): reads registrations from standard input until the harness
goes away, then kills and removes what is left. Imports nothing of the harness but ``reaper``."""

from __future__ import annotations

import json
import signal
import sys

from super_bench.sandbox.lifetime.reaper import (
    kill_cgroup,
    kill_group,
    kill_marked,
    remove_container,
    remove_tree,
    unmount,
)

# Not typing's own: importing typing was a tenth of the watchdog's start-up CPU (type checkers know the name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _key(entry: dict[str, Any]) -> str:
    return json.dumps([entry["kind"], entry["value"]])


def clean_up(entries: list[dict[str, Any]]) -> None:
    """Kill processes first (groups, marked processes, cgroups, containers), then unmount task file systems,
    then remove directories."""
    order = {"pgid": 0, "marker": 1, "cgroup": 2, "container": 3, "mount": 4, "dir": 5}
    for entry in sorted(entries, key=lambda e: order.get(e["kind"], 5)):
        kind, value = entry["kind"], entry["value"]
        if kind == "pgid":
            kill_group(int(value))
        elif kind == "marker":
            kill_marked(str(value))
        elif kind == "cgroup":
            kill_cgroup(str(value))
        elif kind == "container":
            remove_container([str(v) for v in value[:-1]], str(value[-1]))
        elif kind == "mount":
            unmount(str(value[0]), str(value[1]))
        elif kind == "dir":
            remove_tree(str(value))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the harness; this ends when it has
    registered: dict[str, dict[str, Any]] = {}
    for raw in sys.stdin.buffer:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if entry.get("op") == "add":
            registered[_key(entry)] = entry
        else:
            registered.pop(_key(entry), None)
    clean_up(list(registered.values()))


if __name__ == "__main__":
    main()

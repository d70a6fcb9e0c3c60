"""The run being resumed, and its identity: read from ``run.json``, or, where that is lost or unreadable, refused
by name until the user adopts the results (``--adopt``) or replaces the run (``--redo``).

Each result row carries the digest of the identity it was run with (``identity_sha256``), so that adopting can
check the rows against the settings given: rows of other settings are refused, never mixed in; rows written
before rows carried the digest cannot be checked, and are adopted only once the user has confirmed the settings
(``super-bench run --adopt`` shows them and asks, or ``--yes``).
"""

from __future__ import annotations

import logging
from typing import Any

from super_bench.errors import IdentityLostError, RunDirError
from super_bench.runner.manifest import check_same_run, identity_sha256
from super_bench.runner.records import NewerRecordError, RunManifest
from super_bench.runner.rundir import RunDir

log = logging.getLogger(__name__)

DAMAGED_SUFFIX = ".damaged"  # an unreadable run.json an adoption set aside, kept as it was


def previous_manifest(run_dir: RunDir, current: dict[str, Any], adopt: bool) -> RunManifest | None:
    """The manifest of the run being resumed (None for a new run, or one adopted), once ``current``, the identity
    of the settings given, is found to be that run's (``check_same_run``). Without a readable ``run.json`` in a
    directory that holds results, the identity is lost: an ``IdentityLostError`` unless ``adopt``, which keeps
    the rows only if none of them says it was run with other settings."""
    path = run_dir.path / "run.json"
    try:
        previous = run_dir.read_manifest()
    except NewerRecordError:
        raise
    except RunDirError as e:
        previous, problem = None, str(e)
    else:
        problem = f"{path} is missing"
    if previous is not None:
        check_same_run(run_dir.path, previous, current)
        return previous
    rows = run_dir.read_results()
    unreadable = path.exists() or path.is_symlink()
    if not rows and not unreadable:
        return None  # a new run (or one that never finished a task)
    if not adopt:
        held = f"{run_dir.results_path} holds {len(rows)} result(s)" if rows else "nothing else tells the settings"
        raise IdentityLostError(
            f"{problem}, and {held}: the run's identity (the settings that decide its scores) is lost, so a resume "
            "cannot tell these settings are the run's. Keep the results with --adopt (rows run with other settings "
            "are refused, each row is checked), or replace the run with --redo"
        )
    digest = identity_sha256(current)
    other = [r for r in rows if r.identity_sha256 not in (None, digest)]
    if other:
        raise IdentityLostError(
            f"{problem}, and {len(other)} of the {len(rows)} result(s) in {run_dir.results_path} were run with other "
            f"settings than these (such as {other[0].task_id}): adopt them with the settings they were run with, or "
            "replace the run with --redo"
        )
    if unreadable:
        path.replace(path.with_name(path.name + DAMAGED_SUFFIX))  # nothing lost: set aside as it was
    unchecked = sum(r.identity_sha256 is None for r in rows)
    log.warning(
        "%s: adopted %d result(s) (%d checked against these settings, %d too old to say); run.json is rebuilt from "
        "these settings",
        run_dir.path,
        len(rows),
        len(rows) - unchecked,
        unchecked,
    )
    return None


def unchecked_rows(run_dir: RunDir) -> int:
    """The rows an adoption of ``run_dir`` would keep unchecked (written before rows carried their identity's
    digest); none where its ``run.json`` is readable, which a resume checks the settings against instead."""
    try:
        if run_dir.read_manifest() is not None:
            return 0
    except NewerRecordError:
        return 0  # refused by the run itself, with its message
    except RunDirError:
        pass
    try:
        return sum(r.identity_sha256 is None for r in run_dir.read_results())
    except RunDirError:
        return 0

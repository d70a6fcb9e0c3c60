"""``--mode reference``: a trajectory's metrics exactly as the SUPER reference harness computed them.

The reference's rules, as facts (docs/scoring.md sets each beside what corrected mode does):

- Submitted: the last action is a submit whose content is truthy; ``0``, ``0.0``, ``""``, ``[]``,
  ``{}`` and null count as not submitted, and the submission is then compared as null.
- Output match: only when the gold answer is truthy; a falsy gold (``0``, ``""``, ``[]``, ``{}``)
  leaves the metric undefined. The comparison has its arguments swapped (see ``answer``).
- Landmarks: searched in the history the reference kept, newlines as spaces: the agent's cleaned
  observation (see ``cleaning``). A run the reference harness itself recorded (an imported notebook)
  holds that history as the harness stored it, and is read as stored: its SWE-agent runs kept the given
  cells of Masked tasks raw, progress bars and colour codes included, and matched landmarks on them so.
- Script executed: only entrypoints ending in ``.py``, ``.sh`` or ``.bash`` are graded. A step
  counts when its action's content contains the file's base name (or, for a module, the base name
  without ``.py`` together with ``python -m``), its observation has neither ``Traceback`` nor
  ``<name>: error``, and it took at least 10 s; one such step scores 1. Mentioning the file counts
  as running it, and every step is looked at on its own.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from functools import cache
from typing import Any

from super_bench.scoring.answer import score_answer
from super_bench.scoring.cleaning import reference_clean
from super_bench.scoring.entrypoint import EntrypointRun
from super_bench.trajectory import RECORDED_FROM, Step, Trajectory

REFERENCE_MIN_RUNTIME = 10.0
_GRADED_SCRIPTS = (".py", ".sh", ".bash")


def reference_submission(submission: Any) -> Any:
    """The submission as the reference took it: a falsy one is no submission."""
    return submission if submission else None


def reference_output_match(submission: Any, gold: Any) -> float | None:
    """None where the reference did not score output match (a falsy gold answer)."""
    return score_answer(submission, gold, "reference") if gold else None


def kept_text(trajectory: Trajectory) -> Callable[[Step], str]:
    """Each step's output as the reference harness kept it: as stored for a run it recorded itself, else
    cleaned as its agent cleaned it, once however often it is asked for."""
    if RECORDED_FROM in trajectory.metadata:
        return lambda step: step.raw_output

    @cache
    def clean(raw: str) -> str:
        return reference_clean(raw)

    return lambda step: clean(step.raw_output)


def _mentions(content: Any, needle: str) -> bool:
    """Python's ``needle in content``, as the reference tested it (dict contents test their keys)."""
    try:
        return bool(needle in content)
    except TypeError:
        return False


def reference_entrypoint_runs(
    entrypoint: str, steps: list[Step], text: Callable[[Step], str]
) -> list[EntrypointRun] | None:
    """Every step that mentions the entrypoint, with whether the reference counted it; None where the
    reference did not grade the entrypoint (a file type other than .py, .sh, .bash)."""
    if not entrypoint.endswith(_GRADED_SCRIPTS):
        return None
    name = posixpath.basename(entrypoint)
    module = name.replace(".py", "")
    runs = []
    for step in steps:
        content = step.action.content
        if not content:
            continue
        if not (_mentions(content, name) or (_mentions(content, module) and _mentions(content, "python -m"))):
            continue
        output = text(step)
        if "Traceback" in output:
            verdict = (False, "the output has 'Traceback'")
        elif f"{name}: error" in output:
            verdict = (False, f"the output has '{name}: error'")
        elif step.duration < REFERENCE_MIN_RUNTIME:
            verdict = (False, f"took {step.duration:.1f} s, less than {REFERENCE_MIN_RUNTIME:g} s")
        else:
            verdict = (True, "mentions the script, took 10 s or more, no traceback")
        runs.append(EntrypointRun(step.index, step.duration, *verdict))
    return runs

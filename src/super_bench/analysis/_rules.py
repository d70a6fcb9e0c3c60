"""The offline rules that find a failure's primary cause in a trajectory.

In order (docs/failure-analysis.md tells it with examples):

1. ``agent_format``: most of the agent's actions, or two in three of those that tried something, were refused.
2. An answer whose values the run printed: ``wrong_result``, or ``no_experiment`` when the task's
   landmarks and entrypoint (those it defines) were all missed, so that what ran was not the experiment.
3. Else ``no_experiment`` where the episode ended on a script the agent wrote itself (``_substitute``).
4. Else the blockers never resolved (see ``_resolve``): ``environment`` before ``resource`` before
   ``compute`` before ``repository_error``, as each can cause the next. Where the task asked the agent to
   install the dependencies, a failure of a library of another version (even one patched around) is
   ``environment`` before the agent's or the repository's errors.
5. Else a budget stop right after a run that went through is ``compute``; else such a failure of a dependencies
   task ``environment``; anything else ``no_experiment``.
"""

from __future__ import annotations

import re

from super_bench._names import BUDGET_STOPS
from super_bench.analysis._model import QUOTE_CHARS, Cause, FailureCause, fully_succeeded
from super_bench.analysis._resolve import VERSION_MISMATCH, Blocker, Run, blockers, runs
from super_bench.analysis._signals import last_line, strip_ansi
from super_bench.analysis._substitute import substitute
from super_bench.reading import FAILED_EDIT, Deed, read_trajectory
from super_bench.scoring import Metrics, ProvenanceStatus, answer_provenance
from super_bench.trajectory import Step, Trajectory

_SHOWN = ("observed", "partly_observed", "given")
_READING = ("view", "search", "shell", "submit")
# Each can cause the next; an error in code the agent changed ranks with the repository's own.
_PRIORITY: dict[Cause, int] = {"environment": 0, "resource": 1, "compute": 2, "repository_error": 3, "no_experiment": 3}
_MADE_UP = re.compile(
    r"[^.\n]*\b(?:dummy|mock|fake|synthetic|placeholder|made[- ]up|manually create|sample data)\b[^.\n]*", re.I
)
# What an agent says, submitting, when the values asked for were not to be had: what it submits is no result.
_UNAVAILABLE = re.compile(
    r"[^.\n]*\b(?:not available|unavailable|(?:could not|unable to) (?:obtain|determine))\b[^.\n]*",
    re.I,
)
_THOUGHT_CHARS = 4000
# A task whose part left to the agent is its environment (SUPER's Masked "dependencies" tasks, and ours).
_ASKS_DEPENDENCIES = re.compile(r"\binstall (?:all |the )?(?:required )?dependencies\b", re.I)
_QUERY_CHARS = 20_000
_REASONS = {
    "environment": "installing or importing a dependency failed and was never fixed",
    "resource": "a file, dataset or model the run needs could not be had",
    "compute": "the hardware or the time limit stopped the run, and it never ran through",
    "repository_error": "the repository's own code raised an error that was never fixed",
    "no_experiment": "code the agent changed raised an error that was never fixed, so the experiment never ran",
}


def analyze_failure(
    trajectory: Trajectory, metrics: Metrics, answer_provenance: ProvenanceStatus | None = None
) -> FailureCause | None:
    """The primary cause of the episode's failure; None when every metric the task defines is 1.0.

    ``answer_provenance`` is the answer's provenance status where the caller has it; else it is traced here.
    """
    if fully_succeeded(metrics) or all(v is None for v in metrics.model_dump().values()):
        return None  # nothing failed, or nothing is graded (an ad-hoc query): no failure to explain
    steps = trajectory.agent_steps
    deeds = [d for d in read_trajectory(trajectory) if not d.step.pre_executed]
    refused = [d for d in deeds if d.refused]
    # What the agent tried to do, not what it read: reading files and listing folders change nothing, so an
    # agent that read between its refused attempts still did nothing (two in three attempts came to nothing).
    tried = [d for d in deeds if d.refused or d.kind not in _READING]
    if deeds and (len(refused) * 2 > len(deeds) or len(refused) * 3 > len(tried) * 2):
        first = refused[0].step
        invalid = sum(d.kind == "invalid" for d in refused)
        return _cause(
            "agent_format",
            first,
            _refusal(first),
            0.8,
            f"{len(refused)} of {len(deeds)} actions ({len(tried)} not reading files) were invalid ({invalid}), "
            f"edits that did not apply or malformed commands ({len(refused) - invalid})",
        )
    shown = _shown_answer(trajectory, steps, answer_provenance)
    if shown is not None:
        step, line = shown
        process = [v for v in (metrics.landmarks, metrics.entrypoint) if v is not None]
        if process and not any(process):
            return _cause(
                "no_experiment",
                step,
                line,
                0.6,
                "the run printed the answer, but no landmark of the experiment was reached",
            )
        made_up = _made_up(steps, step)
        if made_up is not None:
            return _cause(
                "no_experiment",
                made_up,
                _MADE_UP.search(_said(made_up)).group(0),  # type: ignore[union-attr]
                0.6,
                f"the values came from data or numbers the agent made up (step {made_up.index} says so)",
            )
        unavailable = _said_unavailable(steps)
        if unavailable is not None:
            return _cause(
                "no_experiment",
                unavailable,
                _UNAVAILABLE.search(_said(unavailable)).group(0),  # type: ignore[union-attr]
                0.6,
                f"the agent submitted values it said it did not have (step {unavailable.index} says so)",
            )
        crash = _crashed_after(deeds, step, _given(trajectory))
        if crash is not None:
            return _cause(
                crash.cause,
                crash.step,
                crash.line,
                0.6,
                _REASONS[crash.cause] + ": the run that printed the answer ended on it" + crash.note,
            )
        if metrics.output_match is not None and metrics.output_match >= 1.0:
            why = "the run printed the answer and it matches, but the run missed landmarks or the entrypoint asked for"
        else:
            why = "the run printed the values it reported, and they do not match"
        return _cause("wrong_result", step, line, 0.8, why)
    every = runs(deeds)
    own = substitute(deeds, every)
    if own is not None:
        line = own.final.line if own.final is not None else last_line(own.step.raw_output)
        return _cause(
            "no_experiment",
            own.step,
            line,
            0.5,
            f"the agent ended on a script it wrote itself ({', '.join(sorted(own.identity))}), in place of the "
            "repository's: no run of the experiment asked for went through",
        )
    found = blockers(steps, every, _given(trajectory))
    best = min(found, key=lambda b: (_PRIORITY[b.cause], b.first)) if found else None
    # Below the environment, a resource and compute: the agent's or the repository's error, or no run at all.
    wrong = _wrong_version(trajectory, every) if best is None or _PRIORITY[best.cause] >= 3 else None
    if wrong is not None and best is not None:
        return wrong
    if best is not None:
        return _cause(
            best.cause, best.step, best.line, best.confidence, (best.reason or _REASONS[best.cause]) + best.note
        )
    attempts = [r for r in every if r.experiment]
    last = attempts[-1] if attempts else None
    # The budget ran out on work in progress: the agent's last action ran the experiment and went through (a
    # view or an edit of a file after it is no run: the budget went on reading, not on computing).
    acting = [d for d in deeds if d.kind not in ("invalid", "submit")]
    working = bool(acting) and last is not None and acting[-1].step is last.step
    if (
        trajectory.stop_reason in BUDGET_STOPS
        and working
        and last is not None
        and not last.problems
        and last.step.outcome == "ok"
    ):
        final = steps[-1]
        line = last_line(final.raw_output) or last_line(str(final.action.content or "")) or str(trajectory.stop_reason)
        return _cause(
            "compute",
            final,
            line,
            0.6,
            f"the run went through (step {last.step.index}), then the {trajectory.stop_reason} budget ran out",
        )
    if wrong is not None:
        return wrong
    if last is not None and last.problems:
        problem = last.problems[-1]
        return _cause(
            "no_experiment", last.step, problem.line, 0.5, "the run never went through to the reported values"
        )
    valid = [s for s in steps if s.outcome != "invalid"] or steps
    end = valid[-1] if valid else None
    line = last_line(end.raw_output) if end is not None else ""
    return _cause("no_experiment", end, line, 0.4, "no run of the experiment went through")


def _wrong_version(trajectory: Trajectory, every: list[Run]) -> FailureCause | None:
    """Where the task asked the agent to install the dependencies: ``environment``, at the episode's last failure
    that a library of another version makes (an install or import that failed, an API the installed library
    lacks), even one the agent then patched around: setting up the environment was its part of the task."""
    if not _ASKS_DEPENDENCIES.search(trajectory.query[:_QUERY_CHARS]):
        return None
    for run in reversed(every):
        for problem in reversed(run.problems):
            # A failed install or import is of kind environment already; an API the installed library lacks is
            # raised in the repository's code.
            api = problem.kind == "repository_error" and problem.line.split(":", 1)[0].endswith(VERSION_MISMATCH)
            if problem.kind == "environment" or api:
                return _cause(
                    "environment",
                    run.step,
                    problem.line,
                    0.6,
                    "the task asked for the dependencies to be installed, and a run failed as a library of another "
                    f"version fails (step {run.step.index}): the environment was never set right",
                )
    return None


def _given(trajectory: Trajectory) -> list[str]:
    """What the agent had before its first step: the task, and the cells run for it with what they printed."""
    given = [s for s in trajectory.steps if s.pre_executed]
    return [trajectory.query, *(str(s.action.content or "") for s in given), *(s.raw_output for s in given)]


def _crashed_after(deeds: list[Deed], shown: Step | None, given: list[str]) -> Blocker | None:
    """The error never resolved that ended the very run that printed the answer: the values it printed were
    not all the run was to show."""
    if shown is None:
        return None
    return next(
        (
            b
            for b in blockers([d.step for d in deeds], runs(deeds), given)
            if b.first == shown.index and b.cause not in ("compute", "no_experiment")
        ),
        None,
    )


def _made_up(steps: list[Step], shown: Step | None) -> Step | None:
    """The step, up to the one that showed the answer, whose thought says the agent made up its data or values
    (dummy, mock, fake, synthetic, placeholder): what ran then was not the experiment on its data."""
    limit = shown.index if shown is not None else None
    for step in steps:
        if limit is not None and step.index > limit:
            break
        if _MADE_UP.search(_said(step)):
            return step
    return None


def _said_unavailable(steps: list[Step]) -> Step | None:
    """The submission, where the agent's thought with it says the values were not to be had."""
    last = next((s for s in reversed(steps) if s.action.type == "submit"), None)
    return last if last is not None and _UNAVAILABLE.search(_said(last)) else None


def _said(step: Step) -> str:
    """A step's thought, in its first characters: what the rules look for in it is said early, and a thought
    of any length is read in bounded time."""
    return (step.thought or "")[:_THOUGHT_CHARS]


def _refusal(step: Step) -> str:
    """The line that says why a step was refused: the edit's complaint, else the last line shown."""
    text = strip_ansi(step.raw_output)
    found = FAILED_EDIT.search(text)
    if found is not None:
        end = text.find("\n", found.start())
        return text[text.rfind("\n", 0, found.start()) + 1 : end if end >= 0 else len(text)]
    return last_line(step.observation) or str(step.action.content or "")[:QUOTE_CHARS]


def _shown_answer(
    trajectory: Trajectory, steps: list[Step], status: ProvenanceStatus | None
) -> tuple[Step | None, str] | None:
    """Where the run printed the submitted values (step, line), if the answer's provenance says it did."""
    if trajectory.submission is None:
        return None
    trace = answer_provenance(trajectory)
    status = status or (trace.status if trace is not None else None)
    if status not in _SHOWN:
        return None
    by_index = {s.index: s for s in trajectory.steps}
    for field in trace.fields if trace is not None else []:
        step = by_index.get(field.step if field.step is not None else -1)
        if step is not None and field.offset is not None:
            text = step.raw_output
            start = text.rfind("\n", 0, field.offset) + 1
            end = text.find("\n", field.offset)
            return step, text[start : end if end >= 0 else len(text)].strip()
    return (steps[-1] if steps else None), ""


def _cause(cause: Cause, step: Step | None, line: str, confidence: float, reason: str) -> FailureCause:
    return FailureCause(
        cause=cause,
        step=step.index if step is not None else None,
        quote=strip_ansi(line).strip()[:QUOTE_CHARS],
        confidence=confidence,
        reason=reason,
    )

"""The tables the command line prints, at 80 columns and at 200: task ids whole, nothing cut short,
the least useful columns given up first, and metrics that do not apply left out with the reason."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from super_bench import Task, load_tasks
from super_bench.cli._display import score_table, task_list_table
from super_bench.runner.results import TaskResult, summarize
from super_bench.scoring import Metrics

# An id as long as the paper's longest Expert ones, and a Masked id longer still.
LONG_IDS = ["unsupervisedhierarchicalsymbolicregression", "textrank-cnndm_configuration,data,goal"]


def results_for(tasks: list[Task], failing: tuple[str, ...] = ()) -> list[TaskResult]:
    """What a run of ``tasks`` leaves in results.jsonl: metrics where the task defines them, the ids in
    ``failing`` stopped by a budget, one of them with the agent's code raising."""
    made = []
    for task in tasks:
        failed = task.task_id in failing
        metrics = Metrics(
            output_match=None if task.answer is None else 0.0 if failed else 1.0,
            landmarks=0.5 if task.landmarks else None,
            entrypoint=1.0 if task.entrypoint else None,
            submitted=0.0 if failed or task.answer is None else 1.0,
        )
        status = "agent_error" if failed and task.task_id == failing[0] else "completed"
        stop = ("max_tokens" if failed else "submitted") if status == "completed" else "agent_stopped"
        made.append(
            TaskResult(
                task_id=task.task_id,
                task_set=task.task_set,
                status=status,
                stop_reason=stop,
                metrics=metrics,
                n_steps=12,
                wall_time=31.4,
            )
        )
    return made


def printed(renderable: object, width: int) -> str:
    console = Console(file=io.StringIO(), width=width)
    console.print(renderable)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text, text
    assert all(len(line) <= width for line in text.splitlines()), text
    return text


def header(text: str) -> str:
    """The column names: the lines above the rule under them."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= set("┡━╇┩─"))
    return "\n".join(lines[:rule])


def whole(task_id: str, text: str) -> bool:
    return re.search(rf"(^|[│ ]){re.escape(task_id)}( |$)", text, re.MULTILINE) is not None


@pytest.mark.parametrize("task_set", ["expert", "masked", "auto"])
def test_the_demo_run_tables_at_80_and_200_columns(task_set: str) -> None:
    tasks = load_tasks("demo", task_set)
    results = results_for(tasks, failing=(tasks[1].task_id, tasks[2].task_id))
    table = score_table(results, summarize(results), title="react-super on the demo tasks")
    narrow, wide = printed(table, 80), printed(table, 200)
    for task in tasks:
        assert whole(task.task_id, narrow) and whole(task.task_id, wide)
    # Wide, every column; at 80 columns the time and the steps give way before any metric.
    assert all(column in header(wide) for column in ("status", "stop reason", "steps", "time (s)"))
    assert "95% CI" in wide
    if task_set != "auto":  # the Auto table, with one metric, fits whole
        assert "time (s)" not in narrow and "31.4" not in narrow and "mean" in narrow
    for text in (narrow, wide):
        assert "max" in text and "agent" in text


def test_long_ids_stay_whole_at_80_columns() -> None:
    tasks = [Task(task_id=task_id, query="q", answer={"a": 1}, landmarks=["x"]) for task_id in LONG_IDS]
    results = results_for(tasks, failing=(LONG_IDS[0],))
    text = printed(score_table(results, summarize(results)), 80)
    assert all(whole(task_id, text) for task_id in LONG_IDS), text
    # So narrow, the intervals go, and the caption says where they are.
    assert "95% intervals in summary.json" in text.replace("\n", " ")


def test_each_mean_says_how_many_tasks_it_is_over() -> None:
    tasks = load_tasks("demo", "expert")  # two of the nine have no entrypoint
    results = results_for(tasks)
    for width in (80, 200):
        text = printed(score_table(results, summarize(results)), width)
        assert re.search(r"^│ tasks +│.* 9 │ +9 │ +7 │ +9 │", text, re.MULTILINE), text
        assert "mean over" not in text


def test_metrics_that_do_not_apply_are_left_out_with_the_reason() -> None:
    # Auto tasks have no answer: nothing to submit, no output to match, no landmarks.
    results = results_for(load_tasks("demo", "auto"))
    for width in (80, 200):
        text = printed(score_table(results, summarize(results)), width)
        assert "entrypoint" in header(text) and "0.00" not in text
        assert not re.search(r"output|match|submitted|landmarks", header(text))
        caption = " ".join(text.split())
        assert "output match, landmarks: no task here defines them" in caption
        assert "submitted: no task here has an answer to submit" in caption


def test_columns_every_row_shares_are_said_once_when_narrow() -> None:
    results = results_for(load_tasks("demo", "masked"))
    text = printed(score_table(results, summarize(results)), 80)
    assert "every task: status completed, stop reason submitted" in " ".join(text.split())
    assert "completed" not in text.split("every task")[0]


def test_ids_that_look_like_markup_are_printed_as_they_are() -> None:
    tasks = [Task(task_id=task_id, query="q", answer=1) for task_id in ("a[bold]b", "[red]c[/red]")]
    results = results_for(tasks)
    text = printed(score_table(results, summarize(results)), 80)
    assert "a[bold]b" in text and "[red]c[/red]" in text


@pytest.mark.parametrize("task_set", ["expert", "masked", "auto"])
def test_the_task_list_at_80_and_200_columns(task_set: str) -> None:
    tasks = load_tasks("demo", task_set)
    narrow = printed(task_list_table(tasks, "demo"), 80)
    wide = printed(task_list_table(tasks, "demo"), 200)
    for task in tasks:
        assert whole(task.task_id, narrow) and whole(task.task_id, wide)
        assert str(task.github_repo) in wide
    assert "set" in header(wide) and f"{len(tasks)} {task_set} task(s) from demo" in narrow


def test_a_terminal_too_narrow_for_any_layout_folds_cells_but_keeps_ids() -> None:
    tasks = load_tasks("demo", "masked")
    text = printed(task_list_table(tasks, "demo"), 50)
    assert all(whole(task.task_id, text) for task in tasks), text

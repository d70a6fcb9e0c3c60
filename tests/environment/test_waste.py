"""Compute waste: a real run whose agent lets a cell time out and interrupts it, and runs an install; the
time of each shows in its row, in summary.json, in the viewer's data, and in ``compare``, next to where it
ran (``node``). Rows written before rows recorded it read as not knowing, never as zero."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from tests.support.helpers import cli

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.report.compare import compare_runs
from super_bench.report.runs import load_run
from super_bench.report.viewer import page_data, task_payload
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.waste import Waste

ACTIONS = [
    {"type": "execute", "content": "import time\ntime.sleep(4)"},  # past the 1 s soft timeout
    {"type": "interrupt"},
    {"type": "execute", "content": "!pip install --no-index --quiet sbnowhere 2>&1 | tail -1"},
    {"type": "execute", "content": "print('fine')"},
    {"type": "submit", "content": "{}"},
]


@pytest.fixture(scope="module")
def wasteful_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("waste")
    actions = root / "actions.json"
    actions.write_text(json.dumps(ACTIONS))
    env = EnvConfig(cell_timeout=1, sandbox=SandboxConfig(backend="local", root=root / "sandboxes"))
    run(RunConfig(agent=f"replay:{actions}", task_ids=["tinyreg"], out=root / "run", env=env), progress=False)
    return root / "run"


def test_a_rows_waste_is_the_time_of_cut_cells_installs_and_an_idle_sandbox(wasteful_run: Path) -> None:
    (row,) = [json.loads(line) for line in (wasteful_run / "results.jsonl").read_text().splitlines()]
    waste = Waste.model_validate(row["waste"])
    assert 1.0 <= waste.interrupted_cells < row["wall_time"]  # the sleeping cell, until it was interrupted
    assert 0 < waste.package_installs < waste.interrupted_cells  # the install failed fast
    assert waste.retried_attempts == 0 and 0 <= waste.idle_sandbox < row["wall_time"]
    assert row["waited"] == 0.0 and row["node"] == socket.gethostname()
    summary = json.loads((wasteful_run / "summary.json").read_text())
    assert summary["waste"] == row["waste"] and summary["waited"] == 0.0


def test_the_viewer_and_compare_show_the_waste(wasteful_run: Path, tmp_path: Path) -> None:
    data = load_run(wasteful_run)
    (result,) = data.results
    assert page_data(data)["waste"] == result.waste.model_dump()  # type: ignore[union-attr]
    payload = task_payload(data, result)
    assert payload["waste"]["interrupted_cells"] >= 1.0 and payload["node"] == socket.gethostname()

    other = tmp_path / "other"
    shutil.copytree(wasteful_run, other)
    comparison = compare_runs(data, load_run(other))
    spent = {t.kind: (t.base, t.other) for t in comparison.time}
    assert set(spent) == {*Waste.model_fields, "waited"}
    assert spent["interrupted_cells"] == (result.waste.interrupted_cells,) * 2  # type: ignore[union-attr]
    shown = cli("compare", str(wasteful_run), str(other))
    assert shown.returncode == 0, shown.stderr
    assert "time without result" in shown.stdout and "interrupted cells" in shown.stdout


def test_rows_that_do_not_record_waste_are_not_counted_as_none_spent() -> None:
    old = TaskResult(task_id="a", task_set="expert", status="completed")  # as a row of an earlier version reads
    assert summarize([old]).waste is None
    new = TaskResult(task_id="b", task_set="expert", status="completed", waste=Waste(package_installs=3.0))
    assert summarize([old, new]).waste == Waste(package_installs=3.0)  # over the rows that record it


def test_figures_summed_at_once_equal_them_added_one_by_one() -> None:
    from super_bench.runner.waste import Waste, total
    from super_bench.trajectory import Usage

    usages = [Usage(model_calls=i, prompt_tokens=10 * i, cost=0.1 * i) for i in range(1, 6)]
    added = Usage()
    for usage in usages:
        added.add(usage)
    assert Usage.summed(usages) == added and added.model_calls == 15 and isinstance(added.model_calls, int)
    wastes = [Waste(idle_sandbox=0.3, package_installs=float(i)) for i in range(4)]
    one_by_one = Waste()
    for waste in wastes:
        one_by_one.add(waste)
    assert total([None, *wastes, None]) == one_by_one and total([None]) is None


def test_untimed_steps_add_no_idle_sandbox_even_where_saved_at_midnight() -> None:
    """A trajectory imported before untimed steps took their neighbour's time still counts only measured time."""
    from datetime import datetime, timedelta, timezone

    from super_bench.actions import Action
    from super_bench.runner.waste import waste_of
    from super_bench.trajectory import UNTIMED, Step, Trajectory

    midnight = datetime(1970, 1, 1, tzinfo=timezone.utc)
    afternoon = midnight + timedelta(hours=14)

    def step(index: int, start: datetime, seconds: float, untimed: bool = False) -> Step:
        end = start + timedelta(seconds=seconds)
        metadata = {UNTIMED: True} if untimed else {}
        return Step(index=index, action=Action.execute("1"), start_time=start, end_time=end, metadata=metadata)

    steps = [step(0, midnight, 0, True), step(1, afternoon, 4), step(2, afternoon + timedelta(seconds=24), 6)]
    trajectory = Trajectory(task_id="t", query="q", steps=steps, started_at=midnight, finished_at=steps[-1].end_time)
    waste = waste_of(trajectory)
    assert waste is not None and waste.idle_sandbox == 20.0
    assert waste_of(trajectory.model_copy(update={"steps": steps[:1]})) is None  # nothing measured

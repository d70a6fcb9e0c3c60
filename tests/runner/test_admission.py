"""Tasks held back until their machine has the free disk and memory they need: the wait is shown in the live
display while it lasts and recorded in the rows and summary.json; a task that could never fit stops the run."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from rich.console import Console

from super_bench import EnvConfig, RunConfig, SandboxConfig, run
from super_bench.errors import ConfigError
from super_bench.runner.admission import ADMISSION, MIN_MEMORY, Need, free_disk, free_memory
from super_bench.runner.progress import RunProgress
from super_bench.sandbox.conformance import wait_for


def most_of_the_free_disk(path: Path) -> int:
    """More than half of what is free where ``path`` is: one task fits, two do not."""
    return int(free_disk(path)[0] * 0.6)


def display() -> str:
    progress = RunProgress()
    progress.begin(2, [])
    console = Console(file=io.StringIO(), width=200)
    console.print(progress.progress.make_tasks_table(progress.progress.tasks))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_task_waits_while_a_running_one_holds_the_disk_it_needs_and_the_display_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ADMISSION, "poll", 0.05)
    need = Need(disk=most_of_the_free_disk(tmp_path), memory=MIN_MEMORY)
    release = threading.Event()
    events: list[str] = []
    slots = []

    def task(name: str, hold: bool) -> None:
        with ADMISSION.room(need, tmp_path) as slot:
            events.append(name)
            slots.append(slot)
            if hold:
                release.wait(30)

    first = threading.Thread(target=task, args=("first", True))
    first.start()
    assert wait_for(lambda: events == ["first"])
    second = threading.Thread(target=task, args=("second", False))
    second.start()
    try:
        assert wait_for(lambda: ADMISSION.waiting() == ["disk"]), "the second task did not wait"
        assert events == ["first"] and "1 waiting for disk" in display()
    finally:
        release.set()
        first.join(10)
        second.join(10)
    assert events == ["first", "second"] and ADMISSION.waiting() == []
    assert slots[0].waited == 0.0 and slots[1].waited > 0
    assert "waiting" not in display()


def test_what_a_running_task_has_already_used_is_not_counted_twice(tmp_path: Path) -> None:
    need = Need(disk=most_of_the_free_disk(tmp_path), memory=MIN_MEMORY)
    with ADMISSION.room(need, tmp_path) as slot:
        # The task has written what it reserved: that is gone from the free space already.
        slot.usage = lambda: (need.disk, None)
        with ADMISSION.room(need, tmp_path) as second:
            assert second.waited == 0.0


def test_a_task_that_could_never_fit_stops_the_run_with_the_option_to_change(tmp_path: Path) -> None:
    disk_total = free_disk(tmp_path)[1]
    never = Need(disk=disk_total + (1 << 30), memory=MIN_MEMORY)
    disk_message = r"needs .* of disk \(--disk-limit\), more than the file system of"
    with pytest.raises(ConfigError, match=disk_message), ADMISSION.room(never, tmp_path):
        pass
    memory_total = free_memory()[1]
    never = Need(disk=1 << 20, memory=memory_total + (1 << 30))
    memory_message = r"of memory \(--memory-limit\), more than this machine has"
    with pytest.raises(ConfigError, match=memory_message), ADMISSION.room(never, tmp_path):
        pass
    assert ADMISSION.waiting() == []


@pytest.mark.slow
def test_a_run_records_how_long_its_tasks_waited_for_room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ADMISSION, "poll", 0.1)
    root = tmp_path / "sandboxes"
    sandbox = SandboxConfig(
        backend="local", root=root, disk_limit=most_of_the_free_disk(tmp_path), disk_enforcement="watch"
    )
    config = RunConfig(
        task_ids=["tinyreg", "tinyreg-lr"], workers=2, out=tmp_path / "run", env=EnvConfig(sandbox=sandbox)
    )
    outcome = run(config, progress=False)
    assert [r.status for r in outcome.results] == ["completed", "completed"]
    waits = sorted(r.waited for r in outcome.results)
    assert waits[0] == 0.0 and waits[1] > 0  # the second started once the first was done
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(row["waited"] for row in rows) == waits
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["waited"] == pytest.approx(sum(waits))

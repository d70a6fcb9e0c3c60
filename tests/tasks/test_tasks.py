"""Task records and loaders: files, directories, the bundled demo, and the Hub layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from super_bench import Action, Task, load_tasks
from super_bench.errors import TaskError, TaskSourceError, TaskValidationError
from super_bench.tasks.loaders import find_task

EXPERT_ROW = {
    "task_id": "colbert",
    "github_repo": "https://github.com/example/colbert",
    "git_commit": "abc123",
    "query": "Train and report the MRR.",
    "query_components": json.dumps({"e2e_task": "train", "outcome": "mrr"}),
    "answer": json.dumps({"mrr": 0.25}),
    "landmarks": [r"epoch \d+ done"],
    "solution": [{"action": {"type": "execute", "content": "!ls"}, "observation": ""}],
    "solution_dependencies": "numpy==1.26",
}
MASKED_ROW = {
    "task_id": "colbert_configuration,data",
    "query": "Finish the setup.",
    "answer": json.dumps({"mrr": 0.25}),
    "landmarks": [],
    "pre_execute_cells": [json.dumps({"type": "execute", "content": "x = 1"})],
    "solutions": "an older column",
}
AUTO_ROW = {"task_id": "auto1", "query": "Run it.", "entrypoint": "train.py", "answer": ""}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_dataset_rows_are_normalised() -> None:
    task = Task.model_validate(EXPERT_ROW)
    assert task.answer == {"mrr": 0.25}
    assert task.query_components == {"e2e_task": "train", "outcome": "mrr"}
    assert task.solution == [Action.execute("!ls")]
    masked = Task.model_validate({**{k: v for k, v in MASKED_ROW.items() if k != "solutions"}, "task_set": "masked"})
    assert masked.pre_execute_cells == [Action.execute("x = 1")]
    assert masked.categories == ["configuration", "data"]
    assert masked.expert_id == "colbert"


def test_cells_given_as_plain_code_even_dict_literals() -> None:
    task = Task(task_id="t", query="q", solution=["print(1)", '{"a": 1}', {"type": "submit", "content": 1}])
    assert [a.type for a in task.solution] == ["execute", "execute", "submit"]


def test_load_a_jsonl_file_infers_sets_and_keeps_extra_columns(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "tasks.jsonl", [EXPERT_ROW, MASKED_ROW, AUTO_ROW])
    tasks = load_tasks(path)
    assert [(t.task_id, t.task_set) for t in tasks] == [
        ("colbert", "expert"),
        ("colbert_configuration,data", "masked"),
        ("auto1", "auto"),
    ]
    assert tasks[1].metadata == {"solutions": "an older column"}
    assert [t.task_id for t in load_tasks(path, "auto")] == ["auto1"]
    assert tasks[2].answer is None


def test_load_json_and_directories_of_dataset_files(tmp_path: Path) -> None:
    data = tmp_path / "super-data" / "tasks"
    data.mkdir(parents=True)
    write_jsonl(data / "expert.jsonl", [EXPERT_ROW])
    write_jsonl(data / "masked.jsonl", [MASKED_ROW])
    (data / "auto_gen.json").write_text(json.dumps([AUTO_ROW]))
    root = tmp_path / "super-data"
    assert [t.task_id for t in load_tasks(root, "masked")] == ["colbert_configuration,data"]
    assert [t.task_id for t in load_tasks(root, "auto")] == ["auto1"]
    assert len(load_tasks(root)) == 3


def test_selecting_ids_keeps_their_order_and_suggests_near_misses(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [EXPERT_ROW, AUTO_ROW])
    assert [t.task_id for t in load_tasks(path, task_ids=["auto1", "colbert"])] == ["auto1", "colbert"]
    with pytest.raises(TaskError, match=r"'colbret' \(did you mean colbert\?\)"):
        load_tasks(path, task_ids=["colbret"])
    assert len(load_tasks(path, limit=1)) == 1


def test_bad_rows_name_file_line_task_and_field(tmp_path: Path) -> None:
    rows = [
        EXPERT_ROW,
        {**EXPERT_ROW, "task_id": "bad-answer", "answer": "{mrr: 0.25"},
        "{not json",
        {**EXPERT_ROW, "task_id": "bad-regex", "landmarks": ["epoch (unclosed"]},
        {"task_id": "no-query"},
        {**EXPERT_ROW, "task_id": "typo", "landmark": ["x"]},
        [1, 2],
        {**EXPERT_ROW},
        {**AUTO_ROW, "task_id": "auto-without-entrypoint", "entrypoint": "", "task_set": "auto"},
    ]
    path = write_jsonl(tmp_path / "tasks.jsonl", rows)
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    problems = info.value.problems
    text = "\n".join(problems)
    assert f"{path}:2 (task 'bad-answer'): field 'answer': answer is not valid JSON" in text
    assert f"{path}:3: not valid JSON" in text
    assert f"{path}:4 (task 'bad-regex'): field 'landmarks': landmark 0" in text
    assert f"{path}:5 (task 'no-query'): field 'query': Field required" in text
    assert "unknown field 'landmark'; did you mean 'landmarks'?" in text
    assert f"{path}:7: expected a JSON object, got list" in text
    assert f"{path}:8 (task 'colbert'): duplicate task_id (first at {path}:1)" in text
    assert "an auto task needs an entrypoint" in text
    assert len(problems) == 8
    assert "--skip-invalid" in str(info.value)
    assert [t.task_id for t in load_tasks(path, skip_invalid=True)] == ["colbert"]


def test_missing_and_empty_sources(tmp_path: Path) -> None:
    with pytest.raises(TaskSourceError, match="does not exist"):
        load_tasks(tmp_path / "nope.jsonl")
    with pytest.raises(TaskSourceError, match=r"no \.jsonl"):
        load_tasks(tmp_path)
    with pytest.raises(TaskError, match="unknown task set"):
        load_tasks("demo", "mixed")


def test_the_bundled_demo_suite_is_valid() -> None:
    for task_set in ("expert", "masked", "auto"):
        tasks = load_tasks("demo", task_set)
        assert tasks, task_set
        assert all(t.task_set == task_set for t in tasks)
        assert all(t.solution for t in tasks)
    assert all(t.answer is not None and t.landmarks for t in load_tasks("demo", "expert"))
    assert all(t.pre_execute_cells for t in load_tasks("demo", "masked"))
    assert all(t.entrypoint for t in load_tasks("demo", "auto"))


def test_parquet_files(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([EXPERT_ROW, {**EXPERT_ROW, "task_id": "second"}]), tmp_path / "x.parquet")
    assert [t.task_id for t in load_tasks(tmp_path / "x.parquet")] == ["colbert", "second"]


# -- the Hugging Face loader, on local copies of the dataset's two layouts ---------------------------
def _hub_copy(root: Path, readme: str, files: dict[str, list[dict[str, Any]]]) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "README.md").write_text(readme)
    for name, rows in files.items():
        write_jsonl(root / "tasks" / name, rows)
    return root


CURRENT_LAYOUT = """---
configs:
- config_name: Expert
  data_files:
  - split: all_examples
    path: tasks/expert.jsonl
- config_name: Masked
  data_files:
  - split: all_examples
    path: tasks/masked.jsonl
- config_name: Auto
  data_files:
  - split: all_examples
    path: tasks/auto_gen.jsonl
---
"""
OLD_LAYOUT = """---
configs:
- config_name: default
  data_files:
  - split: Expert
    path: tasks/expert.jsonl
  - split: AutoGenerated
    path: tasks/auto_gen.jsonl
  - split: Scenarios
    path: tasks/scenarios.jsonl
---
"""


@pytest.mark.parametrize("layout", ["current", "old"])
def test_hub_loader_reads_both_dataset_layouts(tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    masked_file = "masked.jsonl" if layout == "current" else "scenarios.jsonl"
    rows = [EXPERT_ROW, MASKED_ROW, AUTO_ROW]
    if layout == "old":  # one config, so every split has the same columns, all strings here
        columns = ("task_id", "query", "answer", "landmarks", "entrypoint", "pre_execute_cells")
        rows = [{c: v if isinstance(v := row.get(c, ""), str) else json.dumps(v) for c in columns} for row in rows]
    root = _hub_copy(
        tmp_path / "super",
        CURRENT_LAYOUT if layout == "current" else OLD_LAYOUT,
        {"expert.jsonl": [rows[0]], masked_file: [rows[1]], "auto_gen.jsonl": [rows[2]]},
    )
    assert [t.task_id for t in load_tasks(f"hf:{root}", "expert")] == ["colbert"]
    (masked,) = load_tasks(f"hf:{root}", "masked", skip_invalid=False)
    assert masked.task_set == "masked" and masked.pre_execute_cells == [Action.execute("x = 1")]
    assert [t.task_set for t in load_tasks(f"hf:{root}", "auto")] == ["auto"]


def test_hub_loader_fails_fast_and_helpfully_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent-cache")
    monkeypatch.setenv("HF_DATASETS_CACHE", "/nonexistent-cache")
    import time

    started = time.monotonic()
    with pytest.raises(TaskSourceError) as info:
        load_tasks("hf:allenai/super", "expert")
    assert time.monotonic() - started < 15
    assert "--source super-data" in str(info.value)


def test_an_id_of_another_set_says_which_set_holds_it() -> None:
    with pytest.raises(TaskError) as caught:
        load_tasks("demo", "expert", task_ids=["tinyreg_goal"])
    assert "'tinyreg_goal' (a masked task: add --set masked)" in str(caught.value)
    assert "`super-bench tasks list --set expert` shows the 9 expert tasks" in str(caught.value)
    with pytest.raises(TaskError) as caught:
        load_tasks("demo", "masked", task_ids=["tinyreg"])
    assert "(an expert task: add --set expert)" in str(caught.value)
    assert f"`super-bench tasks list --set masked` shows the {len(load_tasks('demo', 'masked'))} masked" in str(
        caught.value
    )
    # Without a set (as `play` looks), the count is of every set, and the listing says so.
    with pytest.raises(TaskError) as caught:
        find_task("nope")
    total = sum(len(load_tasks("demo", s)) for s in ("expert", "masked", "auto"))
    assert f"--set expert|masked|auto` shows the {total} tasks of all sets" in str(caught.value)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(answer=_json_values)
def test_every_gold_answer_survives_tasks_jsonl(answer: Any) -> None:
    # A run re-reads its tasks from tasks.jsonl: a plain string ("foo", "0.5") must come back as the string.
    task = Task(task_id="t", query="q", answer=json.dumps(answer))
    again = Task.model_validate_json(task.model_dump_json())
    assert again.answer == task.answer == answer
    assert type(again.answer) is type(answer)

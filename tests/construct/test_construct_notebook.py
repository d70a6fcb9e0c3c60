"""`construct from-notebook` on a notebook made from a demo task, suggested landmarks, and `doctor`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from tests.support.helpers import REFERENCE_TRAJECTORIES, cli

from super_bench import demo, load_tasks, run
from super_bench.construct.gold import min_runtime_problems
from super_bench.construct.landmarks import generalise, milestone, suggest_landmarks
from super_bench.construct.notebook import notebook_task
from super_bench.errors import TaskError
from super_bench.runner.results import TaskResult
from super_bench.tasks.model import Task
from super_bench.tasks.regex_check import slow_patterns

TINYREG = "https://github.com/super-bench-demo/tinyreg"
QUERY = "Train TinyReg's ridge regression for 5 epochs on the first 50 examples and report the test MSE."


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notebook of a gold run of the demo task tinyreg: its solution cells with their outputs."""
    out = tmp_path_factory.mktemp("gold") / "run"
    run(task_ids=["tinyreg"], out=out)
    return out / "tasks" / "tinyreg" / "trajectory.ipynb"


# -- landmarks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "regex"),
    [
        ("epoch 5/5: train loss 6.3111", r"epoch 5/5: train loss -?\d+\.\d+"),
        ("Epoch 2/5: loss=0.25", r"Epoch \d+/\d+: loss=-?\d+\.\d+"),
        ("Indexed 240 passages (126 terms) in 0.05s", r"Indexed \d+ passages \(\d+ terms\) in -?\d+\.\d+s"),
        ("ROUGE-1 F1: 0.4453 | top-100 docs, gpt2", r"ROUGE-1 F1: -?\d+\.\d+ \| top-100 docs, gpt2"),
        ("Saved model to /tmp/sb-x1/content/out/model.pt", r"Saved model to \S*out/model\.pt"),
        ("lr 2.0e-05  step 12", r"lr -?\d+\.\d+[eE][-+]?\d+\s+step \d+"),
        ("Map: 100%|█████| 10/10 [00:00<00:00, 814.18 examples/s]", r"Map:?\s*100%\|[^|]*\|\s*10/10"),
    ],
)
def test_a_line_becomes_a_regex_that_generalises_what_varies(line: str, regex: str) -> None:
    assert generalise(line) == regex
    assert slow_patterns([regex]) == {}


def test_milestones_and_noise() -> None:
    assert milestone("Loaded 600 train / 150 dev / 200 test sentences") == (
        "data",
        "Loaded 600 train / 150 dev / 200 test sentences",
    )
    assert milestone("2024-08-19 19:47:46,794 [INFO ]  Epoch 1/1") == ("loop", "Epoch 1/1")
    assert milestone("Test accuracy: 0.8100 | Test macro-F1: 0.8100") is not None
    for noise in (
        "Successfully installed polartok-0.3.1",
        "Receiving objects: 100% (20/20), 19.72 KiB | 6.57 MiB/s, done.",
        "checkpoint = torch.load(path)",
        "Some weights of BertModel were not initialized from the model checkpoint at bert-base",
        "Downloading config.json: 100%|██████| 481/481 [00:00<00:00, 977kB/s]",
        "Epoch 1:  45%|████▌     | 450/1000 [00:12<00:15, 36.21it/s]",
        "{'accuracy': 0.81}",
    ):
        assert milestone(noise) is None, noise


def test_suggestions_pick_one_milestone_of_each_kind_in_order() -> None:
    outputs = [
        "Cloning into 'x'...",
        "Loaded 50 training examples\nLoaded 100 test examples",
        "epoch 1/3: loss 0.9\nepoch 2/3: loss 0.5\nepoch 3/3: loss 0.4\nSaved model to ckpt/model.pt\nTest MSE: 7.4",
    ]
    picks = suggest_landmarks(outputs, limit=3)
    assert [(p.kind, p.cell) for p in picks] == [("data", 2), ("loop", 3), ("metrics", 3)]
    assert picks[1].regex == r"epoch 3/3: loss -?\d+\.\d+"
    assert [p.kind for p in suggest_landmarks(outputs, limit=4)] == ["data", "loop", "saved", "metrics"]


@pytest.mark.skipif(not REFERENCE_TRAJECTORIES.is_dir(), reason="the paper's trajectories are not here")
def test_suggestions_on_real_outputs_match_them_and_cannot_hang() -> None:
    from super_bench.runner.paper_notebooks import read_notebook

    patterns = []
    for path in sorted(REFERENCE_TRAJECTORIES.glob("*/*/history.ipynb"))[:20]:
        outputs = [step.output for step in read_notebook(path).steps]
        for suggestion in suggest_landmarks(outputs):
            assert any(re.search(suggestion.regex, o.replace("\n", " ")) for o in outputs), suggestion
            patterns.append(suggestion.regex)
    assert patterns
    assert slow_patterns(patterns) == {}


# -- from-notebook ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_from_notebook_builds_the_expert_task_that_was_solved(solved: Path, tmp_path: Path) -> None:
    out = tmp_path / "expert.jsonl"
    args = ["construct", "from-notebook", str(solved), "--repo", TINYREG, "--query", QUERY]
    result = cli(*args, "--yes", "--id", "tinyreg-nb", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "Added task 'tinyreg-nb' (4 cells, 3 landmarks)" in result.stdout

    (task,) = load_tasks(out)
    (demo,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    assert task.task_set == "expert"
    assert task.solution == demo.solution
    assert task.answer == demo.answer
    assert task.git_commit == demo.git_commit  # from the notebook's `git checkout`, checked in the repository
    assert task.query == f"{QUERY}\n\nGit repository: {TINYREG}\nCommit: {demo.git_commit}"
    assert task.landmarks == [
        r"Loaded \d+ training examples and \d+ test examples",
        r"epoch 5/5: train loss -?\d+\.\d+",
        r"Test MSE: -?\d+\.\d+",
    ]

    assert cli("tasks", "validate", str(out)).returncode == 0
    # The new task reproduces: its gold run gives its answer and finds its landmarks.
    doctor = cli("doctor", "--source", str(out), "--out", str(tmp_path / "doctor"), "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["status"] == "reproduces"

    again = cli(*args, "--yes", "--id", "tinyreg-nb", "--out", str(out))
    assert again.returncode == 2 and "already has task(s) tinyreg-nb" in again.stderr


def test_from_notebook_checks_the_commit_in_a_git_mirror(solved: Path, tmp_path: Path) -> None:
    url = "https://git.invalid/lab/tinyreg"
    mirror = tmp_path / "tinyreg.bundle"
    mirror.write_bytes((demo.BUNDLES / "tinyreg.bundle").read_bytes())
    args = ["construct", "from-notebook", str(solved), "--repo", url, "--query", QUERY, "--yes"]
    offline = cli(*args)
    assert "could not check commit" in offline.stderr  # the URL does not resolve
    mirrored = cli(*args, "--git-mirror", f"{url}.git={mirror}")
    assert mirrored.returncode == 0, mirrored.stderr
    assert "could not check commit" not in mirrored.stderr
    (expected,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    assert json.loads(mirrored.stdout)["git_commit"] == expected.git_commit


def test_from_notebook_asks_before_it_accepts_suggestions(solved: Path) -> None:
    args = ["construct", "from-notebook", str(solved), "--repo", TINYREG, "--query", QUERY]
    result = cli(*args)  # not a terminal, no --yes
    assert result.returncode == 2
    assert "3 landmark(s) suggested (above): accept them with --yes" in result.stderr
    assert r"-> epoch 5/5: train loss -?\d+\.\d+" in result.stderr
    given = cli(*args, "--landmark", "Test MSE: 7\\.40", "--landmark", "Nothing like this")
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout)["landmarks"] == ["Test MSE: 7\\.40", "Nothing like this"]
    assert "landmark 'Nothing like this' matches none of the notebook's outputs" in given.stderr


def test_from_notebook_reviews_landmarks_on_a_terminal(solved: Path) -> None:
    args = ["construct", "from-notebook", str(solved), "--repo", TINYREG, "--query", QUERY]
    # Keep the first suggestion, drop the second, edit the third, add one, finish.
    answers = ["y", "n", "e", r"Test MSE: \d+\.\d+", r"epoch \d+/5", ""]
    output = _on_a_terminal([sys.executable, "-m", "super_bench", *args], answers)
    task = json.loads(output[output.index('{"task_id"') :])
    assert task["landmarks"] == [
        r"Loaded \d+ training examples and \d+ test examples",
        r"Test MSE: \d+\.\d+",
        r"epoch \d+/5",
    ]
    assert "suggested landmark: epoch 5/5: train loss" in output


def _on_a_terminal(command: list[str], answers: list[str], timeout: float = 120) -> str:
    """Run ``command`` with a pseudo-terminal as stdin, typing each answer when a prompt appears."""
    try:
        controller, terminal = pty.openpty()
    except OSError:
        pytest.skip("no pseudo-terminal can be opened here")
    process = subprocess.Popen(
        command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"}
    )
    os.close(terminal)
    assert process.stdout is not None
    output, pending, deadline = b"", list(answers), time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            output += chunk
            if pending and chunk.rstrip().endswith((b":", b"]")):
                os.write(controller, pending.pop(0).encode() + b"\n")
    output += process.stdout.read()
    process.wait(timeout=10)
    os.close(controller)
    assert process.returncode == 0, output.decode()
    assert not pending, output.decode()
    return output.decode()


def test_a_notebook_without_a_printed_answer_is_refused(solved: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(str(solved), as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    code[-1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="done\n")]
    path = tmp_path / "no-answer.ipynb"
    nbformat.write(notebook, str(path))
    with pytest.raises(TaskError, match=r"the last code cell \(cell \d+\) prints no JSON answer"):
        notebook_task(path, task_id="t", query="q", repo=TINYREG, commit=None)
    (tmp_path / "broken.ipynb").write_text("{not json")
    result = cli("construct", "from-notebook", str(tmp_path / "broken.ipynb"), "--repo", TINYREG, "--query", "q")
    assert result.returncode == 2 and "not a readable Jupyter notebook" in result.stderr


# -- doctor ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_doctor_reports_task_rot_with_the_diff(tmp_path: Path) -> None:
    good = json.loads((Path(demo.__file__).parent / "tasks" / "expert.jsonl").read_text().splitlines()[0])
    rotten = {
        **good,
        "task_id": "rotten",
        "answer": json.dumps({"test_mse": 9.9}),
        "landmarks": [*good["landmarks"], "Validation MSE"],
    }
    broken = {**good, "task_id": "broken"}
    broken["solution"] = [*good["solution"][:2], {"type": "execute", "content": "!python train.py --config nope.json"}]
    broken["solution"] += good["solution"][3:]
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in (good, rotten, broken)))

    result = cli("doctor", "--source", str(source), "--out", str(tmp_path / "run"))
    assert result.returncode == 1, result.stderr
    assert "answer['test_mse']: gold 9.9, obtained 7.4031" in result.stdout
    assert "landmark not found: Validation MSE" in result.stdout
    assert "cell 2 ('!python train.py --config nope.json') failed (exit status 1)" in result.stdout
    assert "No such file or directory: 'nope.json'" in result.stdout
    again = cli("doctor", "--source", str(source), "--out", str(tmp_path / "run"), "--json")  # resumes the run
    records = {r["task_id"]: r for r in map(json.loads, again.stdout.splitlines())}
    assert {k: r["status"] for k, r in records.items()} == {"tinyreg": "reproduces", "rotten": "rot", "broken": "rot"}
    assert records["broken"]["problems"][0] == 'answer: gold {"test_mse": 7.4031}, nothing was submitted'


@pytest.mark.parametrize(
    ("durations", "min_runtime", "problem"),
    [
        ([0.5], 0.2, None),
        ([0.3], 0.2, "ran 0.30 s, less than 2x the task's min_runtime of 0.2 s"),
        ([0.3, 0.45], 0.2, None),  # the longest successful run counts
        ([], 0.2, None),  # no successful run: reported as such, not here
    ],
)
def test_doctor_wants_the_entrypoint_to_clear_min_runtime_with_room(
    durations: list[float], min_runtime: float, problem: str | None
) -> None:
    task = Task(task_id="a", query="q", entrypoint="train.py", min_runtime=min_runtime)
    runs = [
        {"step_index": i, "duration": d, "success": True, "reason": "ran successfully"} for i, d in enumerate(durations)
    ]
    runs.append({"step_index": 9, "duration": 5.0, "success": False, "reason": "the output has a Python traceback"})
    result = TaskResult(task_id="a", task_set="auto", status="completed", details={"entrypoint_runs": runs})
    problems = min_runtime_problems(task, result)
    assert problems == (
        []
        if problem is None
        else [f"the entrypoint train.py {problem}: a faster machine may fail it (lower min_runtime)"]
    )

"""`construct mask`: Masked tasks cut from the demo Expert tasks, each checked by a gold run."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from tests.e2e.test_first_hour_slow import MASK
from tests.support.helpers import cli
from tests.support.shared_runs import SharedRuns

from super_bench import demo, load_tasks
from super_bench.construct.blocks import analyse
from super_bench.construct.mask import ModelGoalWriter, mask_tasks
from super_bench.environment import EnvConfig
from super_bench.errors import ModelError
from super_bench.models import ModelRequest
from super_bench.models.mock import MockModel

DEMO_TASKS = Path(demo.__file__).parent / "tasks"


@pytest.mark.slow
def test_masked_tasks_from_every_demo_expert_task_are_solved_by_the_gold_agent(shared_runs: SharedRuns) -> None:
    shared = shared_runs.get(MASK)  # the README's command, run once a session (test_first_hour_slow checks it too)
    out, result = shared.home / "masked.jsonl", shared.result
    assert result.returncode == 0, result.stdout + result.stderr
    experts = {t.task_id: t for t in load_tasks("demo", "expert")}
    masked = load_tasks(out)
    assert f"Wrote {len(masked)} Masked task(s)" in result.stdout and "left out" not in result.stdout

    # One task per block of each solution; every block that the hand-made demo tasks mask is found.
    ids = {t.task_id for t in masked}
    assert len(ids) == len(masked) == 21
    hand_made = {t.task_id.replace("_custom", "_issue") for t in load_tasks("demo", "masked") if "," not in t.task_id}
    assert hand_made <= ids
    assert Counter(t.categories[0] for t in masked) == {
        "goal": 9,
        "issue": 3,
        "data": 3,
        "configuration": 3,
        "dependencies": 2,
        "cpu": 1,
    }
    for task in masked:
        expert = experts[task.expert_id]
        assert task.task_set == "masked" and task.categories[0] in (
            "goal",
            "issue",
            "data",
            "configuration",
            "dependencies",
            "cpu",
        )
        assert sorted(map(str, task.pre_execute_cells + task.solution)) == sorted(map(str, expert.solution))
        assert (task.answer, task.landmarks, task.entrypoint) == (expert.answer, expert.landmarks, None)
        assert task.query.startswith(expert.query) and "What is left to do:" in task.query
    # Later cells independent of the block run ahead of it, as in the hand-made tasks.
    by_id = {t.task_id: t for t in masked}
    (hand,) = load_tasks("demo", "masked", task_ids=["nbsent_dependencies"])
    assert by_id["nbsent_dependencies"].pre_execute_cells == hand.pre_execute_cells
    assert "install the dependencies" in by_id["nbsent_dependencies"].query

    # The check: the gold agent ran each task (pre-executed cells, then the solution) and reproduced it.
    checks = re.findall(r"│ (\S+) +│ +\d+ +│ +\d+ +│ (\w+)", result.stdout)
    assert sorted(task_id for task_id, _ in checks) == sorted(ids), result.stdout
    assert {check for _, check in checks} == {"reproduces"}, result.stdout
    assert cli("tasks", "validate", str(out), "--offline").returncode == 0


def _tinyreg() -> dict[str, object]:
    row: dict[str, object] = json.loads((DEMO_TASKS / "expert.jsonl").read_text().splitlines()[0])
    assert row["task_id"] == "tinyreg"
    return row


@pytest.mark.slow
def test_failed_checks_are_retried_reported_and_left_out(tmp_path: Path) -> None:
    tinyreg = _tinyreg()
    setup, report = tinyreg["solution"][:2], tinyreg["solution"][3]  # type: ignore[index]
    cut = {
        "type": "execute",
        "content": "!head -n 51 data/train.csv > data/train_50.csv\n!cp data/train_50.csv data/train.csv",
    }
    # Looks independent of the data cell (it names no file that cell writes), but needs its output.
    config = {
        "type": "execute",
        "content": 'import glob, json\nrows = len(open(glob.glob("data/train_5*.csv")[0]).readlines()) - 1\n'
        'json.dump({"lr": 0.05, "epochs": 5, "l2": 0.01, "rows": rows}, open("configs/small.json", "w"))',
    }
    train = {"type": "execute", "content": "!python train.py --config configs/small.json"}
    hidden = {**tinyreg, "task_id": "small", "solution": [*setup, cut, config, train, report]}
    wrong = {**tinyreg, "task_id": "wrong", "answer": json.dumps({"test_mse": 1.5})}
    source = tmp_path / "expert.jsonl"
    source.write_text(json.dumps(hidden) + "\n" + json.dumps(wrong) + "\n")
    out = tmp_path / "masked.jsonl"

    result = cli("construct", "mask", "--source", str(source), "--out", str(out), "--keep-failed")
    assert result.returncode == 0, result.stdout + result.stderr
    tasks = {t.task_id: t for t in load_tasks(out)}
    assert set(tasks) == {"small_data", "small_configuration", "small_goal", "wrong_goal"}
    # The data task was tried with the config cell ahead of the data cell, failed, and was retried without.
    assert [c.content for c in tasks["small_data"].pre_execute_cells] == [c["content"] for c in setup]  # type: ignore[index]
    assert "small_data" in result.stdout and "reproduces (retried)" in result.stdout
    assert "check_failed" not in tasks["small_data"].metadata
    assert "answer['test_mse']: gold 1.5, obtained 7.4031" in tasks["wrong_goal"].metadata["check_failed"]

    plain = cli("construct", "mask", "--source", str(source), "--out", str(out), "--task-ids", "wrong")
    assert plain.returncode == 0
    assert "wrong_goal failed its check: answer['test_mse']: gold 1.5" in plain.stdout and "1 left out" in plain.stdout
    assert out.read_text() == ""


def test_a_model_phrases_the_goal(tmp_path: Path) -> None:
    (tinyreg,) = load_tasks("demo", "expert", task_ids=["tinyreg"])
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return '"The repository is ready. Work out how to train the model as asked, then report the test MSE."'

    writer = ModelGoalWriter(MockModel("goals", responder=respond))
    report = mask_tasks([tinyreg], tmp_path / "runs", writer=writer, env=EnvConfig(cell_timeout=120))
    (masked,) = report.kept
    assert masked.task.query.endswith(
        "\n\nThe repository is ready. Work out how to train the model as asked, then report the test MSE."
    )
    prompt = seen[0].messages[-1]["content"]
    assert tinyreg.query in prompt and "!python train.py --config configs/base.json" in prompt
    assert "What is left to do: find how to run the experiment" in prompt  # the template's draft
    assert writer.usage.model_calls == 1


def test_the_template_is_used_when_the_model_fails() -> None:
    (tinyreg,) = load_tasks("demo", "expert", task_ids=["tinyreg"])

    def fail(request: ModelRequest) -> str:
        raise ModelError("the service is down")

    writer = ModelGoalWriter(MockModel("down", responder=fail))
    cells = analyse(tinyreg.solution)
    from super_bench.construct.mask import splits, template_goal

    (split,) = splits(cells)
    assert writer(tinyreg, cells, split, template_goal(cells, split)) == template_goal(cells, split)
    assert writer.failures == 1


@pytest.mark.slow
def test_mask_with_a_scripted_model_from_the_command_line(tmp_path: Path) -> None:
    script = tmp_path / "goals.txt"
    script.write_text("Everything is set up but the run itself: run the training as asked and report the test MSE.\n")
    out = tmp_path / "masked.jsonl"
    result = cli("construct", "mask", "--task-ids", "tinyreg", "--model", f"mock/{script}", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    (task,) = load_tasks(out)
    assert task.task_id == "tinyreg_goal"
    assert task.query.endswith("run the training as asked and report the test MSE.")
    assert "model: 1 calls" in result.stdout


@pytest.mark.parametrize(
    ("cell", "category"),
    [
        ("!pip install -r requirements.txt", "dependencies"),
        ("%pip install transformers==4.30", "dependencies"),
        ("!python -m spacy download en_core_web_sm", "dependencies"),
        ("!wget https://example.org/data.zip\n!unzip data.zip -d data", "data"),
        ("from datasets import load_dataset\nds = load_dataset('glue', 'mrpc')", "data"),
        ("!python scripts/download_data.py --out data", "data"),
        ("!sed -i 's/lr: 0.1/lr: 0.01/' configs/train.yaml", "configuration"),
        ("!sed -i 's/.cuda()/.cpu()/' model.py", "cpu"),
        ("!sed -i 's/np.float)/float)/' utils.py", "issue"),
        ("%%writefile src/fix.py\nprint('fixed')", "issue"),
        ("!bash run.sh", "goal"),
        ("!ls data\n!cat README.md", "other"),
    ],
)
def test_cells_are_sorted_into_blocks(cell: str, category: str) -> None:
    from super_bench.actions import Action

    cells = analyse([Action.execute(cell), Action.execute("print(1)")])
    assert cells[0].category == category
    assert cells[1].category == "goal"  # the last cell reports the answer


@pytest.mark.parametrize(
    ("cell", "category", "scripts"),
    [
        ("!timeout 600 python prepare_data.py --split dev", "data", ["python prepare_data.py --split dev"]),
        ("!FOO=1 timeout -s INT 600 nohup python train.py", "goal", ["python train.py"]),
        ("!stdbuf -oL bash run.sh", "goal", ["bash run.sh"]),
        ("!true;(python prepare_data.py)", "data", ["python prepare_data.py"]),
    ],
)
def test_construction_reads_a_command_line_as_scoring_does(cell: str, category: str, scripts: list[str]) -> None:
    from super_bench.actions import Action
    from super_bench.scoring.entrypoint import cell_runs_entrypoint

    (cell_info, _) = analyse([Action.execute(cell), Action.execute("print(1)")])
    assert cell_info.category == category
    assert cell_info.scripts == scripts
    assert cell_runs_entrypoint(cell, scripts[0].split()[1])  # scoring sees the same script run


def test_python_that_does_work_is_part_of_the_goal_and_setup_stays_in_place() -> None:
    from super_bench.actions import Action
    from super_bench.construct.mask import splits

    cells = analyse(
        [
            Action.execute("!git clone https://example.org/repo\n%cd repo"),
            Action.execute("!pip install -r requirements.txt"),
            Action.execute("%cd src"),
            Action.execute("print(open('README.md').read())"),
            Action.execute("from trainer import Trainer\nresult = Trainer(epochs=1).fit()"),
            Action.execute("out = !python evaluate.py\nprint(out)"),
            Action.execute("print(result, out)"),
        ]
    )
    assert [c.category for c in cells] == ["setup", "dependencies", "setup", "other", "goal", "goal", "goal"]
    assert "out" in cells[5].defines and cells[5].scripts == ["python evaluate.py"]
    (dependencies, goal) = splits(cells)
    assert dependencies.moved == [] and dependencies.pre == [0]  # `%cd src` is not run ahead of the install
    assert goal.pre == [0, 1, 2, 3] and goal.rest == [4, 5, 6]

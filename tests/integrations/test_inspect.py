"""The super_bench/... Inspect AI tasks, run end to end by Inspect with its scripted mock model."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import AgentSubmit, react
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model

from super_bench.errors import ConfigError
from super_bench.integrations.inspect_ext.tasks import demo_expert, super_task
from super_bench.integrations.inspect_ext.tools import notebook_tools, submit
from super_bench.sandbox.mirrors.serving import git_config_dir

CLONE = "!git clone https://github.com/super-bench-demo/tinyreg"
TRAIN = "!python train.py --config configs/base.json --epochs 5 --limit 50"


def call(tool: str, **arguments: Any) -> ModelOutput:
    output = ModelOutput.for_tool_call("mockllm/model", tool, arguments)
    # With its usage given, the mock model does not count tokens (which would download a tokenizer).
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def say(text: str) -> ModelOutput:
    output = ModelOutput.from_content("mockllm/model", text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


@pytest.fixture
def workdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sandboxes go here (through the temporary directory), so the test can see them go."""
    # The process's git configuration folder lasts as long as the process, not a sandbox: made before.
    git_config_dir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def run_eval(task: str, outputs: list[ModelOutput], log_dir: Path, **options: Any) -> EvalSample:
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = inspect_eval(task, model=model, task_args=options, log_dir=str(log_dir / "logs"), display="none")
    assert isinstance(log, EvalLog)
    assert log.status == "success", log.error
    assert log.samples is not None
    (sample,) = log.samples
    assert not [p for p in log_dir.iterdir() if p.name.startswith("super-bench-")], "a sandbox was left behind"
    return sample


def tool_results(sample: EvalSample) -> list[tuple[str, str, str | None]]:
    return [
        (m.function or "", m.text, m.error.message if m.error else None)
        for m in sample.messages
        if isinstance(m, ChatMessageTool)
    ]


def scores(sample: EvalSample) -> dict[str, Any]:
    return {name: score.value for name, score in (sample.scores or {}).items()}


@pytest.mark.slow
def test_demo_expert_end_to_end(workdirs: Path) -> None:
    outputs = [
        call("execute", code=CLONE),
        call("execute", code="%cd tinyreg"),
        call("execute", code=TRAIN),
        call("submit", answer="about 7.4"),
        call("submit", answer='{"test_mse": 7.4031}'),
    ]
    sample = run_eval("super_bench/demo_expert", outputs, workdirs, task_ids="tinyreg", cell_timeout=60)
    results = tool_results(sample)
    assert [r[0] for r in results] == ["execute", "execute", "execute", "submit", "submit"]
    assert "Cloning into 'tinyreg'" in results[0][1]
    assert "Test MSE: 7.4031" in results[2][1]
    refused = results[3][2]
    assert refused is not None and "not valid JSON" in refused  # refused, and the agent went on
    assert scores(sample) == {"output_match": 1.0, "landmarks": 1.0}
    assert sample.scores is not None
    landmarks = sample.scores["landmarks"]
    assert landmarks.explanation is not None and "found at step 2: Test MSE" in landmarks.explanation
    assert sample.scores["output_match"].metadata == {"stop_reason": "submitted", "steps": 5, "mode": "corrected"}


@pytest.mark.slow
def test_soft_timeouts_interrupts_and_edits(workdirs: Path) -> None:
    outputs = [
        call("execute", code=f"{CLONE}\n%cd tinyreg"),
        call("edit", path="configs/base.json", before='  "epochs": 200,', after='  "epochs": 7,'),
        call("edit", path="configs/base.json", before='  "epochs": 999,', after=""),
        call("execute", code="import time\nprint('started', flush=True)\ntime.sleep(3)\nprint('finished')"),
        call("continue_wait"),
        call("continue_wait"),
        call("execute", code="time.sleep(60)"),
        call("interrupt"),
        call("execute", code="!python train.py --config configs/base.json --limit 50"),
        call("submit", answer='{"test_mse": 1.0}'),
    ]
    sample = run_eval("super_bench/demo_expert", outputs, workdirs, task_ids="tinyreg", cell_timeout=2.5)
    results = tool_results(sample)
    assert results[1] == ("edit", results[1][1], None)
    assert results[2][2] is not None and "No edit made" in results[2][2]
    assert "started" in results[3][1] and "still running" in results[3][1] and "continue_wait" in results[3][1]
    assert "finished" in results[4][1]
    assert results[5][2] is not None and "nothing to wait for" in results[5][2]
    assert "still running" in results[6][1]
    assert "KeyboardInterrupt" in results[7][1]
    assert "epoch 7/7" in results[8][1]  # the edited config was used
    assert scores(sample) == {"output_match": 0.0, "landmarks": pytest.approx(2 / 3)}  # not "epoch 5/5"


@pytest.mark.slow
def test_demo_masked_shows_the_pre_executed_cells(workdirs: Path) -> None:
    outputs = [
        call("execute", code=TRAIN),
        call("execute", code="import json; print(json.load(open('results/metrics.json')))"),
        call("submit", answer='{"test_mse": 7.4031}'),
    ]
    sample = run_eval("super_bench/demo_masked", outputs, workdirs, task_ids="tinyreg_goal")
    shown = [m.text for m in sample.messages if m.role == "user"]
    assert any("already been run" in text and "Cloning into" in text and "%cd tinyreg" in text for text in shown)
    assert scores(sample) == {"output_match": 1.0, "landmarks": 1.0}


@pytest.mark.slow
def test_demo_auto_scores_whether_the_script_ran(workdirs: Path) -> None:
    outputs = [
        call("execute", code=f"{CLONE}\n%cd tinyreg"),
        call("execute", code="!python train.py --config configs/base.json"),
        call("submit", answer="null"),
    ]
    sample = run_eval("super_bench/demo_auto", outputs, workdirs, task_ids="tinyreg-auto")
    assert scores(sample) == {"entrypoint": 1.0}
    assert sample.scores is not None
    assert "step 1" in (sample.scores["entrypoint"].explanation or "")


def test_the_step_budget_ends_the_sample(workdirs: Path) -> None:
    outputs = [call("execute", code=f"print({i})") for i in range(5)]
    sample = run_eval("super_bench/demo_expert", outputs, workdirs, task_ids="tinyreg", max_steps=2)
    results = tool_results(sample)
    assert len(results) == 2 and "The episode is over (max_steps)" in results[1][1]
    assert scores(sample) == {"output_match": 0.0, "landmarks": 0.0}
    assert sample.scores is not None
    assert sample.scores["output_match"].metadata == {"stop_reason": "max_steps", "steps": 2, "mode": "corrected"}


def test_a_model_that_never_acts_is_stopped(workdirs: Path) -> None:
    sample = run_eval("super_bench/demo_expert", [say("Let me think.")] * 5, workdirs, task_ids="tinyreg")
    assert tool_results(sample) == []
    assert sample.scores is not None
    assert sample.scores["output_match"].metadata == {"stop_reason": "format_error", "steps": 0, "mode": "corrected"}


def test_the_notebook_tools_work_in_another_agent(workdirs: Path) -> None:
    agent = react(tools=notebook_tools(), submit=AgentSubmit(tool=submit()))
    outputs = [call("execute", code="print(6 * 7)"), call("submit", answer='{"test_mse": 42}')]
    model = get_model("mockllm/model", custom_outputs=outputs)
    (log,) = inspect_eval(
        demo_expert(task_ids="tinyreg"), solver=agent, model=model, log_dir=str(workdirs / "logs"), display="none"
    )
    assert log.status == "success" and log.samples is not None
    (sample,) = log.samples
    assert tool_results(sample)[0] == ("execute", "42\n", None)
    assert scores(sample)["output_match"] == 0.0
    assert sample.scores is not None and sample.scores["output_match"].answer == '{"test_mse": 42}'


def test_task_options_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"cell_timout.*the options are: task_ids"):
        super_task("demo", "expert", cell_timout=5)
    with pytest.raises(ConfigError, match="max_steps"):
        super_task("demo", "expert", max_steps=0)
    task = super_task("demo", "expert", task_ids="tinyreg-lr")
    assert [s.id for s in task.dataset] == ["tinyreg-lr"]


def test_a_misspelt_task_option_is_one_clear_line_from_inspect_eval(tmp_path: Path) -> None:
    inspect = Path(sys.executable).parent / "inspect"
    done = subprocess.run(
        [str(inspect), "eval", "super_bench/demo_expert", "-T", "task_idz=tinyreg", "--model", "mockllm/model"],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    # One message, which the terminal's 80 columns wrap between words, and no traceback.
    message = " ".join(" ".join(said).split())
    assert message == (
        "error: invalid task option(s) (-T): task_idz: Extra inputs are not permitted; the options are: task_ids, "
        "limit, sandbox, cell_timeout, max_steps, max_compute, mode"
    ), said

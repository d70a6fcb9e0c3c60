"""Synthetic notebooks in the two styles of the SUPER paper's published trajectories (ReAct-SUPER and
SWE-agent), written cell by cell as that harness laid them out, with gold tasks to re-score them against."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4

EPOCH_LINE = "Epoch 1/1: loss 0.731"
LONG_OUTPUT = "warming up\n" + "x" * 30_000 + f"\n{EPOCH_LINE}\n" + "y" * 30_000 + "\ndone\n"
GOLD = {"test_mse": 7.4031, "epochs": 1}


@dataclass
class NbStep:
    label: str  # what stands in "**Action (LABEL)**:"
    code: str
    output: str = ""
    thought: str = "I think this is the next thing to do."
    clock: tuple[str, str, int] | None = ("10:00:00", "10:00:01", 1)


def write_notebook(
    path: Path, style: str, query: str, steps: list[NbStep], metrics: dict[str, Any] | None = None
) -> Path:
    cells: list[Any] = []
    query_cell = v4.new_markdown_cell(f"### Query\n{query}")
    if style == "swe-agent":
        cells += [
            v4.new_markdown_cell("### System Prompt\n<details>\nSETTING: a synthetic command-line agent.\n</details>"),
            query_cell,
        ]
    else:
        cells += [
            query_cell,
            v4.new_markdown_cell("### Prompt\n<details>\n[{'role': 'system', 'content': 'synthetic'}]\n</details>"),
        ]
    for n, step in enumerate(steps, 1):
        cells.append(v4.new_markdown_cell(f"### Step {n}"))
        if step.clock is not None:
            start, end, seconds = step.clock
            cells.append(
                v4.new_markdown_cell(f"Execution Start time: {start}, End time: {end} (duration: {seconds} seconds)")
            )
        cells.append(v4.new_markdown_cell(f"**Thought**: {step.thought}"))
        cells.append(v4.new_markdown_cell(f"**Action ({step.label})**:"))
        output = v4.new_output("execute_result", data={"text/plain": step.output}, execution_count=None)
        cells.append(v4.new_code_cell(step.code, outputs=[output]))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(v4.new_notebook(cells=cells), path)
    if metrics is not None:
        (path.parent / "metrics.json").write_text(json.dumps(metrics))
    return path


def react_expert_steps() -> list[NbStep]:
    return [
        NbStep(
            "execute",
            "!git clone https://example.org/tinyrepo",
            "Cloning\x1b[K\rReceiving 50%\rReceiving 100%\r\ndone\n",
        ),
        NbStep(
            "edit",
            "tinyrepo/train.py\n<<<BEFORE_EDIT>>>\nepochs = 10\n<<<AFTER_EDIT>>>\nepochs = 1",
            "Edit was successful.",
        ),
        NbStep("", "", "Thought or action not provided in the correct format.", thought=""),
        NbStep(
            "execute",
            "!python tinyrepo/train.py",
            LONG_OUTPUT + "Your command has already run for 300 seconds.",
            clock=("23:59:50", "00:04:50", 300),
        ),
        NbStep("continue_wait", "", "{'test_mse': 7.4031}\n", clock=("00:04:51", "00:04:58", 7)),
        NbStep("submit", "{'test_mse': 7.4031, 'epochs': 2}", "", clock=("00:05:00", "00:05:00", 0)),
    ]


def react_masked_steps() -> list[NbStep]:
    pre = "[pre-executed by user]"
    return [
        NbStep("execute", "!git clone https://example.org/tinyrepo", "Cloning into 'tinyrepo'...\n", thought=pre),
        NbStep(
            "edit",
            "tinyrepo/train.py\n<<<BEFORE_EDIT>>>\nepochs = 10\n<<<AFTER_EDIT>>>\nepochs = 1",
            "Edit was successful.",
            thought=pre,
        ),
        NbStep("execute", "!python tinyrepo/train.py", f"{EPOCH_LINE}\n"),
        NbStep("interrupt", "", "Kernel interrupted."),
        NbStep("exception", "Total context tokens exceeded.", "", thought=""),
    ]


def swe_expert_steps() -> list[NbStep]:
    return [
        NbStep("None", "!git clone https://example.org/tinyrepo", "Cloning into 'tinyrepo'...\n"),
        NbStep("None", "%cd tinyrepo", "/content/tinyrepo\n"),
        NbStep("open", "open train.py", "[File: /content/tinyrepo/train.py (3 lines total)]\n1:epochs = 10\n"),
        NbStep(
            "edit",
            "edit 1:1\nepochs = 1\nend_of_edit",
            "[File: /content/tinyrepo/train.py (3 lines total)]\n1:epochs = 1\n",
        ),
        NbStep("search_dir", 'search_dir "mse"', 'Found 1 matches for "mse" in /content/tinyrepo\n'),
        NbStep("None", "!python train.py", f"{EPOCH_LINE}\ntest_mse 7.4031\n"),
        NbStep("submit", 'submit {"test_mse": 7.4031, "epochs": 1}', "{test_mse: 7.4031, epochs: 1}"),
    ]


def swe_masked_steps() -> list[NbStep]:
    edit = "EDITING `/content/tinyrepo/train.py. CHANGING:\n\n\nepochs = 10\n\n\n\nTO:\n\n\nepochs = 1\n\n"
    return [
        NbStep(
            "None",
            "!git clone https://example.org/tinyrepo",
            "Cloning into 'tinyrepo'...\n",
            thought="[pre-executed by user]",
            clock=None,
        ),
        NbStep("None", edit, "Edit was successful.", thought="EXECUTED BY USER", clock=None),
        NbStep("None", "!python tinyrepo/train.py", "Traceback (most recent call last):\nValueError: no data\n"),
        NbStep(
            "", "continue_wait", "NameError: name 'continue_wait' is not defined", thought="[continued after timeout]"
        ),
        NbStep("None", "exit_context", "Exited", thought="Exit due to context window"),
    ]


EXPERT_QUERY = 'Train tinyrepo for one epoch and report the test MSE as {"test_mse": 0.0, "epochs": 0}.'
MASKED_QUERY = EXPERT_QUERY + "\n\nI have already executed some of the required steps."
MASKED_ID = "tinyrepo_configuration,data"


def write_published_run(root: Path, style: str) -> tuple[Path, Path]:
    """Two published-style run folders (Expert and Masked) of one agent style; returns their paths."""
    agent = "react-super" if style == "react-super" else "swe-agent"
    expert = root / f"synthetic-model_{agent}_expert"
    masked = root / f"synthetic-model_{agent}_masked"
    expert_steps = react_expert_steps() if style == "react-super" else swe_expert_steps()
    masked_steps = react_masked_steps() if style == "react-super" else swe_masked_steps()
    write_notebook(
        expert / "tinyrepo" / "history.ipynb",
        style,
        EXPERT_QUERY,
        expert_steps,
        {"submitted": 1, "output_match": 0.5, "checkpoints": 0.5, "entrypoint": 0.0},
    )
    write_notebook(
        masked / MASKED_ID / "history.ipynb",
        style,
        MASKED_QUERY,
        masked_steps,
        {"submitted": 0, "output_match": 0.0, "checkpoints": 1.0, "entrypoint": 0.0},
    )
    return expert, masked


def write_gold_tasks(path: Path) -> Path:
    """Gold tasks for the synthetic runs, in the dataset's own row format (JSON strings)."""
    rows = [
        {
            "task_id": "tinyrepo",
            "query": EXPERT_QUERY,
            "task_set": "expert",
            "answer": json.dumps(GOLD),
            "landmarks": ["Epoch \\d+/\\d+: loss", "test_mse"],
        },
        {
            "task_id": MASKED_ID,
            "query": MASKED_QUERY,
            "task_set": "masked",
            "answer": json.dumps(GOLD),
            "landmarks": ["Epoch \\d+/\\d+: loss"],
            "pre_execute_cells": [
                json.dumps({"type": "execute", "content": "!git clone https://example.org/tinyrepo"})
            ],
        },
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path

"""The demo suite's task definitions; writes src/super_bench/demo/tasks/{expert,masked,auto}.jsonl.

    python demo/tasks.py           # regenerate the task files
    python demo/tasks.py --check   # exit 1 if the task files are out of date

Gold answers are recorded here by hand and proven by the gold agent in the test suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "src" / "super_bench" / "demo" / "tasks"
COMMITS = json.loads((HERE.parent / "src" / "super_bench" / "demo" / "bundles" / "commits.json").read_text())
URL = "https://github.com/super-bench-demo/{}"


def execute(code: str) -> dict[str, str]:
    return {"type": "execute", "content": code}


def setup_cells(repo: str) -> list[dict[str, str]]:
    return [execute(f"!git clone {URL.format(repo)}"), execute(f"%cd {repo}\n!git checkout {COMMITS[repo]}")]


def repo_footer(repo: str) -> str:
    return f"\n\nGit repository: {URL.format(repo)}\nCommit: {COMMITS[repo]}"


def json_answer_cell(expression: str) -> dict[str, str]:
    return execute(f"import json\nprint(json.dumps({expression}))")


# -- tinyreg -------------------------------------------------------------------------------------
TINYREG_RUN = "!python train.py --config configs/base.json --epochs 5 --limit 50"
TINYREG_REPORT = json_answer_cell('{"test_mse": json.load(open("results/metrics.json"))["test_mse"]}')
TINYREG_QUERY = (
    "Train a ridge regression model on the HousePrice-mini data with the TinyReg repository and report the "
    'test MSE. Report it as a json structured as follows: {"test_mse": 0.0} (replace 0.0 with the actual value).'
    "\n\nAdditional instructions:\n1. Use the configuration configs/base.json, but train for 5 epochs only."
    "\n2. Use only the first 50 training examples."
)
TINYREG_LANDMARKS = [r"Loaded 50 training examples", r"epoch 5/5: train loss \d+\.\d+", r"Test MSE: \d"]

EXPERT = [
    {
        "task_id": "tinyreg",
        "query": TINYREG_QUERY + repo_footer("tinyreg"),
        "github_repo": URL.format("tinyreg"),
        "git_commit": COMMITS["tinyreg"],
        "answer": json.dumps({"test_mse": 7.4031}),
        "landmarks": TINYREG_LANDMARKS,
        "solution": [*setup_cells("tinyreg"), execute(TINYREG_RUN), TINYREG_REPORT],
    },
    {
        "task_id": "tinyreg-lr",
        "query": (
            "Measure how TinyReg's ridge regression does with a smaller learning rate: train on HousePrice-mini and "
            'report the test MSE as a json structured as follows: {"test_mse": 0.0} (replace 0.0 with the actual '
            "value).\n\nAdditional instructions:\n1. Use configs/base.json with learning rate 0.01 and 20 epochs."
            + repo_footer("tinyreg")
        ),
        "github_repo": URL.format("tinyreg"),
        "git_commit": COMMITS["tinyreg"],
        "answer": json.dumps({"test_mse": 7.5468}),
        "landmarks": [r"Loaded 400 training examples", r"epoch 20/20: train loss"],
        "solution": [
            *setup_cells("tinyreg"),
            execute("!python train.py --config configs/base.json --epochs 20 --lr 0.01"),
            TINYREG_REPORT,
        ],
    },
]

MASKED = [
    {
        "task_id": "tinyreg_goal",
        "query": (
            TINYREG_QUERY
            + "\n\nThe repository is already cloned and checked out; the notebook's current directory is its root. "
            "Find the right command, run the experiment and report the result."
        ),
        "github_repo": URL.format("tinyreg"),
        "git_commit": COMMITS["tinyreg"],
        "answer": json.dumps({"test_mse": 7.4031}),
        "landmarks": TINYREG_LANDMARKS,
        "pre_execute_cells": [json.dumps(cell) for cell in setup_cells("tinyreg")],
        "solution": [execute(TINYREG_RUN), TINYREG_REPORT],
    },
]

AUTO = [
    {
        "task_id": "tinyreg-auto",
        "query": (
            "Train TinyReg's ridge regression on the HousePrice-mini data with the base configuration "
            "(configs/base.json) using train.py." + repo_footer("tinyreg")
        ),
        "github_repo": URL.format("tinyreg"),
        "git_commit": COMMITS["tinyreg"],
        "entrypoint": "train.py",
        "min_runtime": 0.2,
        "solution": [*setup_cells("tinyreg"), execute("!python train.py --config configs/base.json")],
    },
]


def render() -> dict[str, str]:
    return {
        name: "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        for name, rows in (("expert", EXPERT), ("masked", MASKED), ("auto", AUTO))
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, text in render().items():
        path = OUT / f"{name}.jsonl"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(f"out of date: {', '.join(stale)}; run python demo/tasks.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

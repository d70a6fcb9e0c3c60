"""TinyReg: ridge regression by gradient descent (goal, configuration)."""

import json

from taskdefs._common import COMMITS, URL, execute, json_answer_cell, repo_footer, setup_cells

REPO = "tinyreg"
RUN = execute("!python train.py --config configs/base.json --epochs 5 --limit 50")
REPORT = json_answer_cell('{"test_mse": json.load(open("results/metrics.json"))["test_mse"]}')
QUERY = (
    "Train a ridge regression model on the HousePrice-mini data with the TinyReg repository and report the "
    'test MSE. Report it as a json structured as follows: {"test_mse": 0.0} (replace 0.0 with the actual value).'
    "\n\nAdditional instructions:\n1. Use the configuration configs/base.json, but train for 5 epochs only."
    "\n2. Use only the first 50 training examples."
)
LANDMARKS = [r"Loaded 50 training examples", r"epoch 5/5: train loss \d+\.\d+", r"Test MSE: \d"]

EXPERT = [
    {
        "task_id": "tinyreg",
        "query": QUERY + repo_footer(REPO),
        "github_repo": URL.format(REPO),
        "git_commit": COMMITS[REPO],
        "answer": json.dumps({"test_mse": 7.4031}),
        "landmarks": LANDMARKS,
        "solution": [*setup_cells(REPO), RUN, REPORT],
    },
    {
        "task_id": "tinyreg-lr",
        "query": (
            "Measure how TinyReg's ridge regression does with a smaller learning rate: train on HousePrice-mini and "
            'report the test MSE as a json structured as follows: {"test_mse": 0.0} (replace 0.0 with the actual '
            "value).\n\nAdditional instructions:\n1. Use configs/base.json with learning rate 0.01 and 20 epochs."
            + repo_footer(REPO)
        ),
        "github_repo": URL.format(REPO),
        "git_commit": COMMITS[REPO],
        "answer": json.dumps({"test_mse": 7.5468}),
        "landmarks": [r"Loaded 400 training examples", r"epoch 20/20: train loss"],
        "solution": [
            *setup_cells(REPO),
            execute("!python train.py --config configs/base.json --epochs 20 --lr 0.01"),
            REPORT,
        ],
    },
]

MASKED = [
    {
        "task_id": "tinyreg_goal",
        "query": (
            QUERY
            + "\n\nThe repository is already cloned and checked out; the notebook's current directory is its root. "
            "Find the right command, run the experiment and report the result."
        ),
        "github_repo": URL.format(REPO),
        "git_commit": COMMITS[REPO],
        "answer": json.dumps({"test_mse": 7.4031}),
        "landmarks": LANDMARKS,
        "pre_execute_cells": [json.dumps(cell) for cell in setup_cells(REPO)],
        "solution": [RUN, REPORT],
    },
]

AUTO = [
    {
        "task_id": "tinyreg-auto",
        "query": (
            "Train TinyReg's ridge regression on the HousePrice-mini data with the base configuration "
            "(configs/base.json) using train.py." + repo_footer(REPO)
        ),
        "github_repo": URL.format(REPO),
        "git_commit": COMMITS[REPO],
        "entrypoint": "train.py",
        "min_runtime": 0.04,
        "solution": [*setup_cells(REPO), execute("!python train.py --config configs/base.json")],
    },
]

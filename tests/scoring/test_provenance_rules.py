"""Provenance's rules on constructed cases, one per rule, with the Masked runs' cases mirrored: a typed
literal spells a value only at the precision it was written, and progress bars, hyper-parameters and paths
are no evidence of a result (docs/verification.md)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.helpers import step

from super_bench import Action
from super_bench.scoring import trace_answer


def _status(submission: Any, *cells: tuple[str, str]) -> tuple[str | None, list[int | None]]:
    steps = [step(i, Action.execute(code), output) for i, (code, output) in enumerate(cells)]
    provenance = trace_answer(submission, steps)
    assert provenance is not None
    return provenance.status, [f.step for f in provenance.fields]


@pytest.mark.parametrize(
    ("typed", "submitted", "echo"),
    [
        ("3e-5", 0.0, False),  # blockskim: a learning rate is not the answer 0.0
        ("2e-05", 0.0, False),
        ("0.00003", 0.0, False),
        ("0.0", 0.0, True),  # the value itself, spelled out
        ("7.4031", 7.4031, True),
        ("7.40310", 7.4031, True),  # the same value at a finer precision
        ("7.4", 7.4031, False),  # coarser: the last decimals came from the output
        ("0.8523", 0.85, False),  # finer and different: 0.85 was not typed
        ("8.5e-1", 0.85, True),
    ],
)
def test_a_typed_literal_spells_the_value_only_at_the_precision_it_was_written(
    typed: str, submitted: float, echo: bool
) -> None:
    status, where = _status(
        {"exact": submitted},
        (f"!python run.py --value {typed}", "started"),
        ("!python eval.py", f"'exact': {submitted}"),
    )
    assert (status, where) == (("unobserved", [None]) if echo else ("observed", [1]))


def test_blockskim_typed_learning_rate_then_a_printed_zero_is_observed() -> None:
    cells = [
        ("!python src/run_squad.py --learning_rate 3e-5 --num_train_epochs 1", "training..."),
        ("!python src/run_squad.py --do_eval", "Results: {'exact': 0.0, 'f1': 0.7843137254901961}"),
    ]
    assert _status({"exact_match": 0.0, "f1": 0.78}, *cells) == ("observed", [1, 1])


def test_paraphrase_nli_zeros_shown_only_by_a_path_or_a_hyper_parameter_are_unobserved() -> None:
    cells = [
        ("!ls", "model_dir/roberta-base-maxlen42-2e-5\n"),
        ("!cat config.json", '{"learning_rate": 2e-5, "weight_decay": 0.0}'),
        ("print('metrics cannot be computed')", "metrics cannot be computed"),
    ]
    assert _status({"macro_precision": 0.0, "macro_recall": 0.0}, *cells) == ("unobserved", [None, None])


@pytest.mark.parametrize(
    "output",
    [
        " 80%|████████  | 8/10 [00:08<00:02,  1.02it/s]",  # tqdm: its percentage, count, times and rate
        "Evaluating: 100%|██████████| 80/80 [00:04<00:00, 17.76it/s]",
        "   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0.8/1.0 MB 8.0 MB/s eta 0:00:01",  # pip
        "     |████████████████████████████████| 80 kB 8.0 MB/s",  # older pip
        "--lr 0.8",
        "learning_rate=0.8",
        "'weight_decay': 0.8,",
        "|learning_rate                 |0.8                       |",  # a logged table of arguments
        "/data/runs/lr0.8/ckpt-0.8/model.bin",
    ],
)
def test_progress_bars_hyper_parameters_and_paths_are_no_evidence(output: str) -> None:
    assert _status(0.8, ("!python train.py", output))[0] == "unobserved"
    # ... while a result printed beside them is.
    assert _status(0.8, ("!python train.py", output + "\naccuracy: 0.8"))[1] == [0]


@pytest.mark.parametrize(
    ("output", "submitted"),
    [
        ("| model | acc |\n|---|---|\n| ours | 0.853 |", 0.85),  # a table
        ("{'eval_accuracy': 0.8523, 'eval_loss': 0.41}", 0.8523),  # a dict
        ("accuracy: 85.23%", 0.8523),  # a percentage, by its sign
        ("tensor(8.5230e-01)", 0.85),  # scientific notation
        ("100%|██| 10/10 [00:01<00:00, loss=0.85]", 0.85),  # tqdm's postfix is a result
    ],
)
def test_results_in_tables_dicts_percentages_and_scientific_notation_are_evidence(
    output: str, submitted: float
) -> None:
    assert _status(submitted, ("!python eval.py", output)) == ("observed", [0])


def test_a_progress_bars_percentage_is_not_a_fraction() -> None:
    assert _status(0.8, ("!python train.py", " 80%|████████  | 8/10"))[0] == "unobserved"

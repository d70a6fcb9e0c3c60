"""Source printed is no evidence of a result: a cell that only prints files of source code or configuration
(``cat``, ``head``, ``tail``, ``less``, ``sed -n``, ``grep``, ``%pycat``, Python's ``open(...).read()``)
shows what the code would do, so its output shows no submitted value (docs/verification.md, "What is no
evidence"; the published paraphrase-nli and mixup-amp runs: tests/data/provenance_labels.json)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.helpers import step

from super_bench import Action
from super_bench.scoring import trace_answer
from super_bench.scoring.listing import is_source_file, prints_source

SOURCE = "if 0.0 <= thresh:\n    loss = 0.0\nparser.add_argument('--lr', default=2e-4)\n"

LISTINGS = [
    "!cat paraphrase-nli/src/models/nli_trainer.py",
    "!cat -n src/train.py src/model.py",
    "!head -n 40 train.py",
    "!tail -20 configs/base.yaml",
    "!less setup.cfg",
    "!sed -n '/def train/,/def test/p' mixup-amp/run_main.py",
    "!grep -n 'thresh' -A 10 nli_trainer.py",
    "!grep -e thresh -e lr model.py",
    '!cat paraphrase-nli/src/models/nli_trainer.py | grep "trainer_config.json" -A 10',
    "!cd repo && cat train.py | head -n 50",
    "!cat requirements.txt",
    "!cat README.md",  # documentation: what the authors wrote (a README's table is no result of the run)
    "%pycat train.py",
    "%%bash\ncat train.py\nhead config.toml",
    "print(open('train.py').read())",
    "open('src/train.py', 'r').read()",
    "from pathlib import Path\nPath('train.py').read_text()",
    "with open('train.py') as f:\n    print(f.read())",
]

NOT_LISTINGS = [
    "!cat results.json",  # a results file: the run's own output
    "!tail -n 20 train_log.txt",
    "!cat train.py && python train.py",  # runs the code too
    "!cat train.py\n!python train.py",
    "!cat train.py | python",
    "!grep -r thresh .",  # a folder: logs and results too
    "!grep -rn thresh src/model.py",
    "!grep thresh",  # no file: nothing of a file's is printed
    "!sed 's/a/b/' train.py",  # not a plain listing
    "!sed -i -n 'p' train.py",
    "!cat train.py 2>&1 > copy.py",
    "print(open('eval.log').read())",
    "print(open(path).read())",  # a path not written out
    "code = open('train.py').read()\nprint(eval_model(code))",
    "!python -c \"print(open('train.py').read())\"",
    "",
    "print(",  # no Python
]


def _trace(submission: Any, *cells: tuple[str, str], pre: int = 0) -> tuple[str | None, list[int | None]]:
    steps = [step(i, Action.execute(code), output, pre=i < pre) for i, (code, output) in enumerate(cells)]
    provenance = trace_answer(submission, steps)
    assert provenance is not None
    return provenance.status, [f.step for f in provenance.fields]


@pytest.mark.parametrize("cell", LISTINGS)
def test_source_printed_is_no_evidence(cell: str) -> None:
    assert prints_source(cell)
    assert _trace({"accuracy": 0.0}, (cell, SOURCE)) == ("unobserved", [None])
    # ... while a result printed after it is evidence, at its own step.
    assert _trace({"accuracy": 0.0}, (cell, SOURCE), ("!python train.py", "max test acc: 0.0000")) == (
        "observed",
        [1],
    )


@pytest.mark.parametrize("cell", NOT_LISTINGS)
def test_output_of_any_other_cell_is_evidence(cell: str) -> None:
    assert not prints_source(cell)
    if cell and cell != "print(":
        assert _trace({"accuracy": 0.0}, (cell, "accuracy: 0.0")) == ("observed", [0])


def test_the_paraphrase_nli_placeholders_are_unobserved() -> None:
    """The zeros the agent wrote after saying the metrics could not be computed: shown only by a cat'ed
    source file and by the run's table of its arguments (a hyper-parameter)."""
    cells = [
        ("!cat paraphrase-nli/src/models/nli_trainer.py", "        if 0.0 <= thresh:\n"),
        ("!python train_model.py", "[INFO ]  |learning_rate                 |2e-05                 |"),
        ("print('metrics cannot be computed')", "metrics cannot be computed"),
    ]
    assert _trace({"accuracy": 0.0, "macro_f1": 0.0}, *cells) == ("unobserved", [None, None])


def test_a_given_cell_that_prints_source_shows_nothing_either() -> None:
    provenance = trace_answer(0.0, [step(0, Action.execute("!cat train.py"), SOURCE, pre=True)])
    assert provenance is not None
    assert provenance.status == "unobserved"
    assert provenance.fields[0].pre_executed_step is None


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("train.py", True),
        ("a/b/Model.CPP", True),
        ("conf/base.yaml", True),
        ("Makefile", True),
        ("requirements-dev.txt", True),
        ("results.json", False),
        ("train_log.txt", False),
        ("README.md", True),
        ("docs/usage.rst", True),
        ("data.csv", False),
        ("py", False),
    ],
)
def test_source_files_are_told_by_name(path: str, source: bool) -> None:
    assert is_source_file(path) is source


_NAME = st.from_regex(r"[a-z_/]{1,12}", fullmatch=True)


@given(name=_NAME, suffix=st.sampled_from([".py", ".yaml", ".sh", ".json", ".log", ".txt", ".md", ""]))
def test_a_cat_of_one_file_lists_it_exactly_when_it_is_source(name: str, suffix: str) -> None:
    path = name + suffix
    assert prints_source(f"!cat {path}") is is_source_file(path)
    assert not prints_source(f"!cat {path}\n!python {path}")


@given(cell=st.text(max_size=200))
def test_any_cell_is_read_without_error(cell: str) -> None:
    assert prints_source(cell) in (True, False)

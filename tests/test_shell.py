"""The one reader of shell command lines, which construction and scoring share."""

from __future__ import annotations

import pytest

from super_bench.shell import program, shell_commands, simple_commands


def test_a_command_line_is_cut_into_simple_commands() -> None:
    line = "cd src && python train.py --lr 0.1 | tee log.txt; (python eval.py > out.json 2>&1)&\nls 'a b'"
    assert simple_commands(line) == [
        ["cd", "src"],
        ["python", "train.py", "--lr", "0.1"],
        ["tee", "log.txt"],
        ["python", "eval.py", ">", "out.json", "2", ">&", "1"],
        ["ls", "a b"],
    ]
    # A line whose quotes do not balance is split on whitespace; the other lines are read as ever.
    assert simple_commands("echo 'oops\npython x.py") == [["echo", "'oops"], ["python", "x.py"]]


@pytest.mark.parametrize(
    ("words", "rest"),
    [
        ("python x.py", "python x.py"),
        ("CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1 python x.py", "python x.py"),
        ("timeout 600 python x.py", "python x.py"),
        ("timeout -s INT -k 5 600 nohup python x.py", "python x.py"),
        ("nice -n 10 stdbuf -oL env -u HOME FOO=1 python x.py", "python x.py"),
        ("sudo -u alice time python x.py", "python x.py"),
        ("1x=2 python x.py", "1x=2 python x.py"),  # not a variable name: the program itself
        ("nohup", ""),
    ],
)
def test_the_program_is_found_past_assignments_and_wrappers(words: str, rest: str) -> None:
    assert program(words.split()) == rest.split()


def test_the_commands_of_a_cell() -> None:
    cell = "!pip install -q x\nimport os, subprocess\nos.system('python a.py')\nsubprocess.run(['python', 'b c.py'])"
    assert shell_commands(cell) == ["pip install -q x", "python a.py", "python 'b c.py'"]
    assert shell_commands("%%bash\ncd src\npython train.py") == ["cd src\npython train.py"]
    assert shell_commands("%run train.py --epochs 1") == ["python train.py --epochs 1"]
    assert shell_commands("print('!python x.py')") == []

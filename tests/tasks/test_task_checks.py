"""`super-bench tasks validate`: every problem with its line and field, landmarks that cannot hang
the scorer, and entrypoints checked in the repository at the task's commit."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import cli

from super_bench.tasks._regex_syntax import parse
from super_bench.tasks.model import compile_landmark
from super_bench.tasks.regex_check import _sample, adversarial_inputs, slow_patterns

TINYREG = "https://github.com/super-bench-demo/tinyreg"
TINYREG_COMMIT = "2b28166bf889daadc427152435678917f4ed48af"


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_validate_names_the_line_and_field_of_each_problem(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "tasks.jsonl",
        [
            {"task_id": "ok", "query": "q", "answer": {"x": 1}, "landmarks": [r"epoch \d+/\d+"]},
            {"task_id": "no-query", "answer": "1"},
            {"task_id": "bad-regex", "query": "q", "landmarks": ["(unclosed"]},
            {"task_id": "bad-answer", "query": "q", "answer": "{not json"},
            {"task_id": "empty-match", "query": "q", "answer": 1, "landmarks": [r"\d*"]},
            {"task_id": "hangs", "query": "q", "answer": 1, "landmarks": ["ok", r"(\w|\w\w)+$"]},
            {"task_id": "nothing", "query": "q"},
            {"task_id": "x_unknown", "task_set": "masked", "query": "q", "answer": 1},
            {"task_id": "ok", "query": "again", "answer": 1},
        ],
    )
    result = cli("tasks", "validate", str(path), "--no-repos")
    assert result.returncode == 1
    lines = result.stderr.splitlines()

    def problem(line: int, task: str, field: str, message: str) -> None:
        prefix = f"{path}:{line} (task {task!r}): field {field!r}: "
        assert any(p.startswith(prefix) and re.search(message, p) for p in lines), (prefix, lines)

    problem(2, "no-query", "query", "Field required")
    problem(3, "bad-regex", "landmarks", r"landmark 0 \('\(unclosed'\) is not a valid regex")
    problem(4, "bad-answer", "answer", "answer is not valid JSON")
    problem(5, "empty-match", "landmarks", "matches an empty output")
    problem(6, "hangs", "landmarks", r"landmark 1 .* takes more than 2 s on adversarial input")
    problem(7, "nothing", "answer", "nothing to grade")
    problem(8, "x_unknown", "task_id", "unknown masked category 'unknown'")
    assert f"{path}:9 (task 'ok'): duplicate task_id (first at {path}:1)" in result.stderr
    assert not any(f"{path}:1 " in line for line in lines)
    # In file order, and counted.
    numbers = [int(m.group(1)) for line in lines if (m := re.match(rf"{re.escape(str(path))}:(\d+) ", line))]
    assert numbers == sorted(numbers)
    assert "8 problem(s)" in result.stderr


def test_a_catastrophic_regex_is_caught_within_the_time_limit() -> None:
    patterns = [r"(a+)+$", r"epoch \d+/\d+: train loss \d+\.\d+", r"(a|aa)+$", r"(x+x+)+y", r"Test MSE: \d"]
    start = time.monotonic()
    slow = slow_patterns(patterns, timeout=1.0)
    elapsed = time.monotonic() - start
    assert sorted(slow) == [0, 2, 3]
    assert "catastrophic backtracking" in slow[0]
    assert elapsed < 30  # three time-outs of 1 s, not a hang


def test_patterns_that_only_hang_pythons_re_pass_since_scoring_does_not_use_it() -> None:
    # Nested repetitions of this kind and a leading .* take Python's re exponential or quadratic time on
    # these inputs; the engine landmarks are searched with does not backtrack into them.
    assert slow_patterns([r"^(\w+\s?)*$", r".*loss", r"(\w+\s?)+x"], timeout=1.0) == {}


def test_adversarial_inputs_pump_the_repeated_parts() -> None:
    inputs = adversarial_inputs(r"Loss: (\d+\.?)+x")
    assert any(text.startswith("Loss: 0000") and text.endswith("\x00") for text in inputs)
    assert all(len(text) < 10_000 for text in inputs)
    assert adversarial_inputs("plain text") == []


def test_entrypoints_and_commits_are_checked_in_the_repository(tmp_path: Path) -> None:
    good = {"task_set": "auto", "query": "Run it.", "github_repo": TINYREG, "git_commit": TINYREG_COMMIT}
    path = write_rows(
        tmp_path / "auto.jsonl",
        [
            {**good, "task_id": "good", "entrypoint": "train.py"},
            {**good, "task_id": "typo", "entrypoint": "trian.py"},
            {**good, "task_id": "bad-commit", "entrypoint": "train.py", "git_commit": "0123456789abcdef"},
            {**good, "task_id": "gone", "entrypoint": "train.py", "github_repo": TINYREG + "-deleted"},
        ],
    )
    result = cli("tasks", "validate", str(path))
    assert result.returncode == 1
    assert (
        f"{path}:2 (task 'typo'): field 'entrypoint': 'trian.py' is not a file of {TINYREG} at commit "
        f"{TINYREG_COMMIT[:12]} (did you mean train.py?)" in result.stderr
    )
    assert f"{path}:3 (task 'bad-commit'): field 'git_commit': commit 0123456789abcdef is not in" in result.stderr
    assert f"{path}:4 (task 'gone'): field 'github_repo': cannot clone {TINYREG}-deleted" in result.stderr
    assert "(task 'good')" not in result.stderr


def test_offline_skips_repositories_that_need_the_network(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "auto.jsonl",
        [
            {"task_id": "demo", "query": "q", "entrypoint": "train.py", "github_repo": TINYREG},
            {"task_id": "far", "query": "q", "entrypoint": "x.py", "github_repo": "https://example.org/nobody/x"},
        ],
    )
    result = cli("tasks", "validate", str(path), "--offline")
    assert result.returncode == 0, result.stderr
    assert "offline: 1 repository not checked" in result.stderr
    assert "2 task(s) valid" in result.stdout


@pytest.mark.parametrize("task_set", ["expert", "masked", "auto"])
def test_the_demo_suite_is_valid(task_set: str) -> None:
    from super_bench.tasks.checks import check_tasks
    from super_bench.tasks.loaders import load_tasks

    tasks = load_tasks("demo", task_set)
    report = check_tasks([(f"demo {t.task_id}", t) for t in tasks], offline=True)
    assert report.problems == [] and report.notes == []


def test_repositories_are_never_read_as_options_of_git(tmp_path: Path) -> None:
    from tests.support.helpers import make_repo

    repo = make_repo(tmp_path / "-repo", {"train.py": "print('hi')\n"})  # a legitimate name that starts with "-"
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    marker = tmp_path / "ran"
    base = {"query": "q", "entrypoint": "train.py", "git_commit": commit}
    path = write_rows(
        tmp_path / "auto.jsonl",
        [
            {**base, "task_id": "dash", "github_repo": "-repo"},
            {**base, "task_id": "option", "github_repo": f"--upload-pack=touch {marker}"},
            {**base, "task_id": "commit", "github_repo": "-repo", "git_commit": "--output=x"},
        ],
    )
    result = cli("tasks", "validate", str(path), cwd=tmp_path)
    assert "(task 'dash')" not in result.stderr, result.stderr
    assert f"cannot clone --upload-pack=touch {marker}: git clone --quiet failed: fatal: repository" in result.stderr
    assert "(task 'commit'): field 'git_commit': commit --output=x is not in -repo" in result.stderr
    assert not marker.exists()


_ATOMS = st.sampled_from(["a", "b1", r"\d", r"\w", r"\s", "[a-c]", "[^ab]", r"[\d.]", ".", r"\.", "é", r"\x41"])


def _pattern() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=3).map("".join),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{2,}", "+?"])).map(
                lambda t: f"(?:{t[0]}){t[1]}"
            ),
            st.lists(inner, min_size=2, max_size=3).map(lambda alts: "(" + "|".join(alts) + ")"),
            inner.map(lambda x: f"(?P<g>{x})" if "(?P<g>" not in x else f"({x})"),
        )

    return st.recursive(_ATOMS, extend, max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(pattern=_pattern())
def test_the_pattern_reader_samples_what_the_pattern_matches_and_pumps_within_bounds(pattern: str) -> None:
    compiled = compile_landmark(pattern)
    assert compiled.fullmatch(_sample(parse(pattern))), pattern
    assert all(len(text) < 10_000 for text in adversarial_inputs(pattern))


@settings(max_examples=300, deadline=None)
@given(pattern=st.text(alphabet=st.sampled_from("ab(?:)|[]^-\\{},*+.<=!P>#d1"), max_size=20))
def test_the_pattern_reader_never_fails_on_any_text(pattern: str) -> None:
    parse(pattern)
    adversarial_inputs(pattern)

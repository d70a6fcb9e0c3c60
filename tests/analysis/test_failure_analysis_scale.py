"""Failure analysis is linear in an episode's steps (docs/threat-model.md, "Accounting"): a trajectory is anyone's
data, and one of 8,000 steps once took ``analyze`` a minute. Which errors were resolved is found in one pass from
the end; these tests hold it to the rule it replaced (each run against every later one) and count its work."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import step, trajectory

from super_bench.analysis import _resolve, _signals, analyze_failure
from super_bench.analysis._resolve import _NOT_PAST, _PASSED, Run, _Installed, _norm, _resolutions
from super_bench.analysis._signals import Problem
from super_bench.scoring import Metrics

KINDS = ["environment", "resource", "compute", "repository_error", "agent", "early", "other"]
KEYS = ["ModuleNotFoundError: a", "ImportError: b", "command: x", "404", "RuntimeError: c", "pip", "OSError: d"]


def _resolved_by_every_later_run(problem: Problem, run: Run, later: list[Run]) -> bool:
    """The rule as first written: each run against every later one (one that ended on a failure of the kind
    that does not get past the problem's, ``_NOT_PAST``, does not count)."""
    not_past = None if problem.key.startswith(_PASSED) else _NOT_PAST.get(problem.kind)
    for other in later:
        if not other.started:
            continue
        final = other.final
        past = final is None or (final.key != problem.key and final.kind != not_past)
        if other.identity & run.identity and past:
            return True
        if (
            problem.key.startswith(_PASSED)
            and final is not None
            and final.kind not in ("environment", "resource", "other")
        ):
            return True
    return False


PROBLEMS = st.builds(lambda kind, key: Problem(kind, key, key, 0), st.sampled_from(KINDS), st.sampled_from(KEYS))
RUNS = st.builds(
    lambda names, found: Run(step(0, {"type": "execute", "content": "x"}), frozenset(names), found),
    st.sets(st.sampled_from(["a.py", "b.py", "c.py", "cell"]), min_size=1, max_size=2),
    st.lists(PROBLEMS, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RUNS, max_size=12))
def test_one_pass_finds_what_every_later_run_found(attempts: list[Run]) -> None:
    expected = [
        run.final is not None and _resolved_by_every_later_run(run.final, run, attempts[i + 1 :])
        for i, run in enumerate(attempts)
    ]
    assert _resolutions(attempts) == expected


_PIN = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]*)(?:\[[^\]]*\])?(?P<pin>[=<>!~].*)?$")


def _satisfied_by_scanning(spec: str, later: list[str]) -> bool:
    """The rule as first written: every later requirement compared with ``spec``."""
    if spec.startswith("-r "):
        return spec in later
    wanted = _PIN.match(spec)
    if wanted is None:
        return spec in later
    for other in later:
        got = _PIN.match(other)
        same = got is not None and _norm(got.group("name")) == _norm(wanted.group("name"))
        if same and got is not None and wanted.group("pin") in (None, got.group("pin")):
            return True
    return False


SPECS = st.one_of(
    st.sampled_from(["a", "a==1", "a==2", "A_b", "a-b>=3", "-r req.txt", "-r other.txt", "x[y]==1", "x", "Bad!", ""]),
    st.text(alphabet="ab-_.=1[]", max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(SPECS, max_size=8), SPECS)
def test_installs_are_matched_as_by_scanning_every_later_one(installed: list[str], spec: str) -> None:
    later = _Installed()
    later.add(installed)
    assert later.satisfies(spec) == _satisfied_by_scanning(spec, installed)


def _long_episode(count: int) -> Any:
    outputs = [
        ("!pip install foo{i}", "ERROR: No matching distribution found for foo{i}", "error"),
        ("import mod{i}", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'mod{i}'", "error"),
        ("!python train.py --seed {i}", "epoch 1\nRuntimeError: shape mismatch {i}", "error"),
        ("print({i})", "{i}", "ok"),
    ]
    steps = []
    for i in range(count):
        code, output, outcome = outputs[i % len(outputs)]
        steps.append(step(i, {"type": "execute", "content": code.format(i=i)}, output.format(i=i), outcome=outcome))
    return trajectory(*steps)


def test_the_work_of_an_analysis_grows_with_its_steps_not_their_square(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: how often a run's final problem is looked at, for 1,000 and 4,000 steps."""
    looked = [0]
    final = Run.final

    def counted(run: Run) -> Problem | None:
        looked[0] += 1
        return final.fget(run)  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(_resolve.Run, "final", property(counted))
    counts = []
    for count in (1000, 4000):
        looked[0] = 0
        cause = analyze_failure(_long_episode(count), Metrics(output_match=0.0, landmarks=0.0))
        assert cause is not None
        counts.append(looked[0])
    assert counts[1] <= 4 * counts[0] + 100, counts  # linear: four times the steps, four times the work
    assert counts[1] <= 6 * 4000, counts


def _guessing_episode(count: int, flood: int) -> Any:
    """An agent that guesses a download address at every step, each answered by a 404, each output holding
    ``flood`` other addresses, and then runs into the file it never got."""
    noise = " ".join(f"https://n.example/{j}" for j in range(flood))
    steps = [
        step(
            i,
            {"type": "execute", "content": f"!wget https://x.example/guess{i}.csv"},
            f"{noise}\nERROR 404: Not Found.",
        )
        for i in range(count)
    ]
    missing = "Traceback (most recent call last):\nFileNotFoundError: [Errno 2] No such file or directory: 'a.csv'"
    steps.append(step(count, {"type": "execute", "content": "!python train.py"}, missing, outcome="error"))
    return trajectory(*steps)


def test_addresses_shown_are_gathered_in_one_pass_and_only_those_asked_about_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An output can hold any number of addresses: the analysis reads each output once for them and keeps only
    the addresses the failed downloads named."""
    kept: list[int] = []
    scans = [0]
    shown, addresses = _resolve._addresses_shown, _resolve._addresses

    def counted_scan(text: str) -> list[str]:
        scans[0] += 1
        return addresses(text)

    def counted_shown(*args: Any) -> dict[str, int]:
        found = shown(*args)
        kept.append(len(found))
        return found

    monkeypatch.setattr(_resolve, "_addresses", counted_scan)
    monkeypatch.setattr(_resolve, "_addresses_shown", counted_shown)
    counts = []
    for count in (200, 800):
        scans[0] = 0
        cause = analyze_failure(_guessing_episode(count, 500), Metrics(output_match=0.0, landmarks=0.0))
        assert cause is not None and cause.cause == "no_experiment"  # every address was the agent's guess
        counts.append(scans[0])
    assert kept == [0, 0]  # 500 addresses in each output, none of them one the agent fetched
    assert counts[1] <= 4 * counts[0] + 10, counts  # four times the steps, four times the scans


def test_a_flood_of_failed_lookups_reads_the_command_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``KeyError`` is checked against the values the command passed: those are read from the command once
    per step, not once per error line (a command can be 100,000 characters, an output millions of lines)."""
    reads = [0]
    command = _signals.command

    def counted(s: Any) -> str:
        reads[0] += 1
        return command(s)

    monkeypatch.setattr(_signals, "command", counted)
    block = 'Traceback (most recent call last):\n  File "/content/proj/train.py", line 3, in <module>\n'
    code = "!python proj/train.py --dataset custom " + " ".join(f"--x{i} v{i}" for i in range(150))
    for lookups in (10, 1000):
        reads[0] = 0
        output = "".join(f"{block}KeyError: 'k{i}'\n" for i in range(lookups)) + block + "KeyError: 'custom'"
        found = _signals.problems(step(1, {"type": "execute", "content": code}, output), {"proj"})
        assert found[-1].kind == "agent" and found[-2].kind == "repository_error"
        assert reads[0] <= 3, reads  # pip_specs reads it too


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(r"[A-Za-z_][\w-]{0,12}", fullmatch=True),
    st.from_regex(r"[\w./:-]{1,20}", fullmatch=True),
    st.lists(st.from_regex(r"[^\s]{1,10}", fullmatch=True), max_size=5),
)
def test_a_value_passed_by_name_is_found_in_any_of_its_forms(name: str, value: str, around: list[str]) -> None:
    for form in (f"--{name} {value}", f"-{name} '{value}'", f"--{name}={value}", f'{name}="{value}"'):
        code = " ".join([*around, "python", "train.py", form, *around])
        assert value in _signals._passed_values(code), code
    assert value not in _signals._passed_values(f"python train.py {value}")  # given by place, not by name

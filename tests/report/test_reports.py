"""Bootstrap intervals, run comparison, the leaderboard and plots, on run directories written as a run writes them."""

from __future__ import annotations

import csv
import io
import itertools
import json
import sys
from pathlib import Path

import pytest
from tests.support.helpers import cli

from super_bench.analysis import FailureCause
from super_bench.errors import ConfigError, ReportError, RunDirError
from super_bench.report.compare import compare_runs
from super_bench.report.leaderboard import leaderboard_rows, to_csv, to_markdown
from super_bench.report.plots import metric_by_category, plot_metric_by_category, plot_score_vs_cost
from super_bench.report.runs import load_run
from super_bench.runner.records import RunManifest
from super_bench.runner.results import TaskResult, summarize
from super_bench.runner.rundir import RunDir
from super_bench.scoring import Metrics
from super_bench.stats import MIN_PAIRED, bootstrap_mean, paired_bootstrap, paired_permutation_test
from super_bench.trajectory import Usage

CATEGORIES = ["data", "dependencies", "configuration,data", "goal", "issue"]


def write_run(
    path: Path,
    scores: dict[str, float],
    *,
    agent: str,
    cost: float = 0.0,
    task_set: str = "masked",
    mode: str | None = None,
    infra_error: bool = True,
) -> Path:
    """A run directory as the runner leaves it, with the given output-match score per task (rows of the
    given scoring mode; rows that record none, as before rows did, with ``mode`` None)."""
    run_dir = RunDir(path)
    run_dir.create()
    results = [
        TaskResult(
            task_id=task_id,
            task_set=task_set,  # type: ignore[arg-type]
            status="completed",
            stop_reason="submitted",
            metrics=Metrics(output_match=score, landmarks=min(1.0, score + 0.5), submitted=1.0),
            usage=Usage(model_calls=3, cost=cost / len(scores)),
            wall_time=60.0,
            execution_time=30.0,
            mode=mode,
        )
        for task_id, score in scores.items()
    ]
    if infra_error:
        results.append(TaskResult(task_id="broken_data", task_set=task_set, status="infra_error"))  # type: ignore[arg-type]
    run_dir.write_results(results)
    run_dir.write_summary(summarize(results, mode or "corrected"))
    run_dir.write_manifest(RunManifest(config={"agent": agent, "model": "mock/m", "task_set": task_set}))
    return path


def masked_ids(n: int) -> list[str]:
    return [f"repo{i}_{CATEGORIES[i % len(CATEGORIES)]}" for i in range(n)]


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    ids = masked_ids(40)
    base = {t: float(i % 4 == 0) for i, t in enumerate(ids)}  # 10 of 40 solved
    better = {t: float(i % 4 == 0 or i % 4 == 1) for i, t in enumerate(ids)}  # 20 of 40 solved
    better[ids[0]] = 0.0  # one task lost
    better["extra_goal"] = 1.0
    return (
        write_run(tmp_path / "base", base, agent="react", cost=2.0),
        write_run(tmp_path / "better", better, agent="react-super", cost=5.0),
    )


def test_bootstrap_mean_interval() -> None:
    values = [1.0] * 30 + [0.0] * 70
    estimate = bootstrap_mean(values)
    assert estimate.mean == pytest.approx(0.3) and estimate.n == 100
    assert estimate.low is not None and estimate.high is not None
    assert 0.18 < estimate.low < 0.3 < estimate.high < 0.42
    assert bootstrap_mean(values) == estimate  # seeded: the same run always gets the same interval
    assert bootstrap_mean([]).mean is None
    assert bootstrap_mean([0.5] * 5).low == bootstrap_mean([0.5] * 5).high == 0.5
    assert bootstrap_mean([0.7]).model_dump() == {"mean": 0.7, "low": 0.7, "high": 0.7, "n": 1, "level": 0.95}


def test_paired_bootstrap_sees_what_unpaired_means_hide() -> None:
    # Hard and easy tasks vary a lot, but the other run is always exactly 0.1 better.
    a = [0.0, 0.9, 0.1, 0.8, 0.2, 0.7, 0.0, 0.6] * 5
    b = [x + 0.1 for x in a]
    diff = paired_bootstrap(a, b)
    assert diff.mean == pytest.approx(0.1) and diff.excludes_zero()
    assert diff.low == pytest.approx(0.1) and diff.high == pytest.approx(0.1)
    assert not paired_bootstrap([0.0, 1.0] * 10, [1.0, 0.0] * 10).excludes_zero()
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1.0], [])


def test_compare_runs(two_runs: tuple[Path, Path]) -> None:
    base, better = (load_run(p) for p in two_runs)
    c = compare_runs(base, better)
    assert c.n_shared == 40 and c.only_other == ["extra_goal"] and c.only_base == []
    om = next(d for d in c.metrics if d.metric == "output_match")
    assert om.n == 40 and om.base == pytest.approx(0.25) and om.other == pytest.approx(19 / 40)
    assert om.diff.mean == pytest.approx(9 / 40) and om.diff.excludes_zero()
    assert om.p_value is not None and om.significant  # 10 gained, 1 lost of 40
    entry = next(d for d in c.metrics if d.metric == "entrypoint")
    assert entry.n == 0 and entry.diff.mean is None
    ids = masked_ids(40)
    assert c.lost == [ids[0]]
    assert sorted(c.gained) == sorted(t for i, t in enumerate(ids) if i % 4 == 1)
    by_category = {row.category: row for row in c.categories}
    assert set(by_category) == {"data", "dependencies", "configuration", "goal", "issue"}
    assert by_category["data"].n == 16  # "data" tasks and "configuration,data" tasks
    assert by_category["configuration"].n == 8
    assert sum(row.n for row in c.categories) == 48


@pytest.mark.slow
def test_compare_command(two_runs: tuple[Path, Path]) -> None:
    result = cli("compare", *map(str, two_runs))
    assert result.returncode == 0, result.stderr
    assert "output match" in result.stdout and "significant" in result.stdout
    assert "by Masked category" in result.stdout and "configuration" in result.stdout
    as_json = cli("compare", *map(str, two_runs), "--json", "--metric", "landmarks")
    (comparison,) = json.loads(as_json.stdout)
    assert comparison["flip_metric"] == "landmarks" and comparison["n_shared"] == 40
    assert cli("compare", str(two_runs[0])).returncode == 2


def test_leaderboard(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs]
    rows = leaderboard_rows(runs)
    assert [r["run"] for r in rows] == ["better", "base"]  # best headline metric first
    assert rows[0]["agent"] == "react-super" and rows[0]["tasks"] == 42 and rows[0]["scored"] == 41
    assert rows[0]["epochs"] == 1
    assert rows[0]["output_match_low"] < rows[0]["output_match"] < rows[0]["output_match_high"]
    assert rows[0]["cost_usd"] == pytest.approx(5.0)
    table = list(csv.DictReader(io.StringIO(to_csv(runs))))
    assert [r["run"] for r in table] == ["better", "base"] and table[1]["entrypoint"] == ""
    markdown = to_markdown(runs)
    lines = markdown.splitlines()
    assert lines[0].startswith("| run | agent | model | set | mode | tasks | epochs | output match |")
    assert lines[2].startswith("| better | react-super | mock/m | masked | corrected | 42 | 1 | 48.8 [")
    assert len(lines) == 4
    out = tmp_path / "board.csv"
    assert cli("leaderboard", *map(str, two_runs), "--out", str(out)).returncode == 0
    assert out.read_text().startswith("run,agent,model,set,mode,tasks,epochs,scored,output_match,")
    printed = cli("leaderboard", *map(str, two_runs))
    assert printed.stdout == markdown


def test_leaderboard_shows_unknown_cost_as_unknown(tmp_path: Path) -> None:
    """A run whose rows record no model call (gold, imported) has no known cost: "-" and empty, not 0.00; a
    run whose model calls cost nothing shows 0.00."""
    scores = {f"t{i}": 1.0 for i in range(3)}
    free = load_run(write_run(tmp_path / "free", scores, agent="react", infra_error=False))
    unknown_dir = write_run(tmp_path / "unknown", scores, agent="gold", infra_error=False)
    rows = [r.model_copy(update={"usage": Usage()}) for r in RunDir(unknown_dir).read_results()]
    RunDir(unknown_dir).write_results(rows)
    RunDir(unknown_dir).write_summary(summarize(rows))
    unknown = load_run(unknown_dir)
    assert free.cost == 0.0 and unknown.cost is None
    costs = {r["run"]: r["cost_usd"] for r in csv.DictReader(io.StringIO(to_csv([free, unknown])))}
    assert costs == {"free": "0.0", "unknown": ""}
    cells = {line.split(" | ")[0][2:]: line.split(" | ")[-2] for line in to_markdown([free, unknown]).splitlines()[2:]}
    assert cells == {"free": "0.00", "unknown": "-"}


@pytest.mark.slow
def test_plots(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    runs = [load_run(p) for p in two_runs]
    table = metric_by_category(runs, "output_match")
    assert table["base"]["goal"].n == 8 and table["better"]["goal"].n == 9
    for path in (
        plot_metric_by_category(runs, tmp_path / "a" / "by_category.png"),
        plot_score_vs_cost(runs, tmp_path / "cost.png"),
    ):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    result = cli("plot", *map(str, two_runs), "--out", str(tmp_path / "plots"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["metric_by_category.png", "score_vs_cost.png"]
    with pytest.raises(ConfigError, match="nothing to plot"):
        plot_metric_by_category(runs, tmp_path / "x.png", "entrypoint")


def test_plots_without_matplotlib_say_what_to_install(
    two_runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ConfigError, match=r"pip install 'super-bench\[plots\]'"):
        plot_score_vs_cost([load_run(two_runs[0])], tmp_path / "x.png")


def test_reports_on_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no run directory"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="has no results"):
        load_run(tmp_path / "empty")
    result = cli("leaderboard", str(tmp_path / "empty"))
    assert result.returncode == 2 and "not a run directory (no results.jsonl)" in result.stderr
    assert "none of the 1 path(s) is a finished run" in result.stderr


def test_a_full_runs_folder_gives_a_board_of_its_finished_agent_runs(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for run in two_runs:
        run.rename(runs / run.name)
    (runs / "notes.txt").write_text("a file that runs/* matches")
    write_run(runs / "play", {"a_goal": 1.0}, agent="human")
    doctor = write_run(runs / "doctor", {"a_goal": 1.0}, agent="gold")
    RunDir(doctor).write_manifest(RunManifest(command=["super-bench", "doctor"], config={"agent": "gold"}))
    (write_run(runs / "cut", {"a_goal": 1.0}, agent="react") / "summary.json").unlink()  # Ctrl-C before the end
    (write_run(runs / "going", {"a_goal": 1.0}, agent="react") / ".lock").write_text("")
    result = cli("leaderboard", *sorted(map(str, runs.iterdir())))
    assert result.returncode == 0, result.stderr
    assert [line.split("|")[1].strip() for line in result.stdout.splitlines()[2:]] == ["better", "base"]
    for name, why in [
        ("notes.txt", "not a run directory"),
        ("play", "a `play` session"),
        ("doctor", "a `doctor` run"),
        ("cut", "an unfinished run"),
        ("going", "a run still going"),
    ]:
        assert f"skipped {runs / name}: {why}" in result.stderr.replace("\n", ""), result.stderr
    assert "2 run(s) used, 5 skipped" in result.stderr


def test_help_of_the_report_commands() -> None:
    for command in ("view", "import-trajectories", "compare", "leaderboard", "plot"):
        result = cli(command, "--help")
        assert result.returncode == 0 and "Usage:" in result.stdout, result.stderr


# -- small samples, tasks in common, modes ---------------------------------------------------------
def test_a_one_task_comparison_claims_nothing(tmp_path: Path) -> None:
    base = write_run(tmp_path / "a", {"t": 0.0}, agent="x", infra_error=False)
    other = write_run(tmp_path / "b", {"t": 1.0}, agent="y", infra_error=False)
    om = next(d for d in compare_runs(load_run(base), load_run(other)).metrics if d.metric == "output_match")
    assert om.n == 1 and om.diff.mean == 1.0
    assert (om.diff.low, om.diff.high) == (-1.0, 1.0)  # not the point [1, 1] a bootstrap of one task gives
    assert om.p_value is None and not om.significant and om.verdict == "too few paired tasks (under 6)"
    result = cli("compare", str(base), str(other))
    assert result.returncode == 0, result.stderr
    assert "too few paired tasks" in result.stdout and "significant" not in result.stdout


def brute_force_p(a: list[float], b: list[float]) -> float:
    """The sign-flip test by its definition: every one of the 2**n ways of flipping the differences."""
    differences = [y - x for x, y in zip(a, b)]
    observed = abs(sum(differences))
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, differences))) >= observed - 1e-12 for signs in flips)
    return extreme / len(flips)


@pytest.mark.parametrize(
    ("a", "b", "p"),
    [
        ([0.0] * 6, [1.0] * 6, 2 / 64),  # all six better: only all-plus and all-minus are as extreme
        ([0.0] * 10 + [0.5] * 4, [0.0] * 10 + [1.0] * 4, 2 / 16),  # ties carry no sign: 2 of 2**4 flips
        ([0.0] * 5, [1.0] * 5, None),  # under 6 pairs: no p-value
        ([0.0, 1.0] * 5, [1.0, 0.0] * 5, 1.0),
        ([0.0] * 7, [1.0] * 6 + [0.0], 2 / 64),  # a tie changes nothing
    ],
)
def test_exact_paired_test(a: list[float], b: list[float], p: float | None) -> None:
    assert MIN_PAIRED == 6
    assert paired_permutation_test(a, b) == (None if p is None else pytest.approx(p))


def test_exact_paired_test_agrees_with_its_definition() -> None:
    a = [0.1, 0.5, 0.25, 0.9, 1.0, 0.0, 0.3, 0.66]
    b = [0.4, 0.5, 0.75, 0.2, 1.0, 1.0, 0.9, 0.33]
    assert paired_permutation_test(a, b) == pytest.approx(brute_force_p(a, b))
    assert paired_permutation_test(a[:6], [x + 0.1 for x in a[:6]]) == pytest.approx(2 / 64)
    # 14 differences of distinct sizes have 2**14 distinct sums, past what is counted exactly: sampled.
    many_a = [i / 20 for i in range(14)]
    many_b = [x + (0.013 * (i + 1) if i % 3 else -0.011 * (i + 1)) for i, x in enumerate(many_a)]
    exact = brute_force_p(many_a, many_b)
    sampled = paired_permutation_test(many_a, many_b)
    assert sampled is not None and abs(sampled - exact) < 0.02 and 0.01 < exact < 0.99
    assert paired_permutation_test(many_a, many_b) == sampled  # seeded


def test_exact_paired_test_counts_ties_exactly() -> None:
    """Landmark thirds: 1/3 + 1/3 ties 2/3 exactly, which a decimal grid (1e-9) lost (it gave 0.671875)."""
    from fractions import Fraction

    third = Fraction(1, 3)
    a = [Fraction(0)] * 3 + [third] * 3 + [Fraction(0)]
    b = [third, third, 2 * third, Fraction(0), Fraction(0), Fraction(0), third]
    differences = [y - x for x, y in zip(a, b)]
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, differences))) >= abs(sum(differences)) for signs in flips)
    assert extreme / len(flips) == 0.765625
    assert paired_permutation_test([float(x) for x in a], [float(y) for y in b]) == extreme / len(flips)


def test_runs_with_no_task_in_common_are_refused(tmp_path: Path) -> None:
    base = write_run(tmp_path / "a", {"t1": 1.0}, agent="x")
    other = write_run(tmp_path / "b", {"t2": 1.0}, agent="y")
    with pytest.raises(ReportError, match="no scored task in common"):
        compare_runs(load_run(base), load_run(other))
    result = cli("compare", str(base), str(other))
    assert result.returncode == 2 and "no scored task in common" in result.stderr


@pytest.mark.slow
def test_runs_scored_in_different_modes_are_not_mixed(tmp_path: Path) -> None:
    scores = {t: float(i % 2) for i, t in enumerate(masked_ids(10))}
    corrected = write_run(tmp_path / "c", scores, agent="x", mode="corrected")
    reference = write_run(tmp_path / "r", scores, agent="y", mode="reference")
    old = write_run(tmp_path / "old", scores, agent="z")  # rows from before modes were recorded
    assert load_run(old).mode == "corrected" and load_run(reference).mode == "reference"
    with pytest.raises(ReportError, match=r"scored in different modes .*c: corrected.*r: reference"):
        compare_runs(load_run(corrected), load_run(reference))
    assert compare_runs(load_run(corrected), load_run(old)).base_mode == "corrected"
    for command in ("compare", "leaderboard"):
        refused = cli(command, str(corrected), str(reference))
        assert refused.returncode == 2 and "--allow-mixed-modes" in refused.stderr
        allowed = cli(command, str(corrected), str(reference), "--allow-mixed-modes")
        assert allowed.returncode == 0, allowed.stderr
        assert "reference" in allowed.stdout and "corrected" in allowed.stdout


def test_a_run_whose_rows_mix_modes_is_mixed(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run", {"a_data": 1.0, "b_data": 0.0}, agent="x", mode="corrected")
    run_dir = RunDir(path)
    rows = run_dir.read_results()
    rows[0] = rows[0].model_copy(update={"mode": "recorded"})
    run_dir.write_results(rows)
    mixed = load_run(path)
    assert mixed.mode == "mixed" and mixed.summary.modes == {"recorded": 1, "corrected": 2}
    with pytest.raises(ReportError, match=r"mixed \(corrected 2, recorded 1\)"):
        compare_runs(mixed, mixed)


def test_rows_written_before_modes_were_recorded_still_load(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run", {"a_data": 1.0}, agent="x")
    old_rows = [
        {k: v for k, v in json.loads(line).items() if k not in ("mode", "unscored")}
        for line in (path / "results.jsonl").read_text().splitlines()
    ]
    (path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in old_rows))
    summary = json.loads((path / "summary.json").read_text())
    old_summary = {k: v for k, v in summary.items() if k not in ("modes", "unscored")}
    (path / "summary.json").write_text(json.dumps({**old_summary, "mode": "reference"}))
    run = load_run(path)
    assert run.mode == "reference" and run.summary.n_scored == 1 and run.results[0].mode is None


def epoch_run(path: Path, causes: dict[str, list[str]]) -> Path:
    """A run of several epochs: per task, each epoch's failure cause (``none``: it succeeded)."""
    run_dir = RunDir(path)
    run_dir.create()
    results = []
    for task_id, per_epoch in causes.items():
        for epoch, cause in enumerate(per_epoch, 1):
            solved = cause == "none"
            failure = None if solved else FailureCause(cause=cause, confidence=0.7)  # type: ignore[arg-type]
            results.append(
                TaskResult(
                    task_id=task_id,
                    task_set="expert",
                    epoch=epoch,
                    status="completed",
                    stop_reason="submitted",
                    metrics=Metrics(output_match=float(solved), submitted=1.0),
                    failure=failure,
                )
            )
    run_dir.write_results(results)
    run_dir.write_summary(summarize(results, "corrected"))
    run_dir.write_manifest(RunManifest(config={"agent": "react", "model": "mock/m", "task_set": "expert"}))
    return path


def test_compare_counts_causes_over_every_epoch_as_its_flips_do(tmp_path: Path) -> None:
    base = epoch_run(tmp_path / "base", {"a": ["compute", "compute"], "b": ["none", "none"], "c": ["none", "none"]})
    other = epoch_run(
        tmp_path / "other", {"a": ["compute", "environment"], "b": ["none", "none"], "c": ["resource", "none"]}
    )
    c = compare_runs(load_run(base), load_run(other))
    counts = {x.cause: (x.base, x.other) for x in c.causes}
    assert counts["compute"] == (2, 1) and counts["environment"] == (0, 1) and counts["resource"] == (0, 1)
    assert counts["none"] == (4, 3)  # task-epochs: the second epoch's causes count, not the first alone
    assert sum(b for b, _ in counts.values()) == sum(o for _, o in counts.values()) == 6
    assert [(m.task_id, m.base, m.other) for m in c.moved] == [
        ("a", "compute, compute", "compute, environment"),
        ("c", "none, none", "resource, none"),
    ]
    # The flips use each task's mean over its epochs: c fell from solved to half solved.
    assert c.lost == ["c"] and c.gained == []


def test_leaderboard_says_tasks_and_epochs_apart(tmp_path: Path) -> None:
    run = load_run(epoch_run(tmp_path / "two", {"a": ["none", "compute"], "b": ["none", "none"]}))
    [row] = leaderboard_rows([run])
    assert (row["tasks"], row["epochs"], row["scored"]) == (2, 2, 4)
    assert "| corrected | 2 | 2 |" in to_markdown([run])

"""Re-scoring throughput: ``super-bench score`` on a large synthetic run, in trajectories per second.

The run (made by ``bench_viewer.make_run``): N tasks, each a trajectory of 10 to 100 steps whose
outputs are training logs, one of them with a landmark line, and a submission to grade. Ours:
``rescore`` of the whole run (read every trajectory, grade answer and landmarks, rewrite
results.jsonl and summary.json), in this process (the throughput the target bounds), and
``super-bench score`` from the command line (the same, plus the command's fixed start-up). The
reference: reading and parsing every ``trajectory.json`` with ``json.loads``, the least any
re-scorer must do.

Scoring traces each submitted value to the step that first printed it (answer provenance); each of the
run's answers is printed halfway through its logs, as an evaluation after training prints it. Its cost:
the same re-scoring with the tracing switched off (``trace_answer`` replaced, for that timing only, by
one that traces nothing), in the same repeats, so that the machine's drift falls on both alike. A second
run submits answers its logs never print, so that every output is searched through to its end: the
worst case of that search. Against an earlier release (``--baseline``, the ``src`` folder of its source
tree, or ``$SUPER_BENCH_BASELINE``): the same run re-scored by that release and by this one, in turn,
each in a process of its own that stays up, in CPU time; the earlier release reads the run as it would
have written it (without the fields it did not know yet, which are at their defaults).

Reference mode re-scores the same run with each output cleaned as the reference agent cleaned it; the
cleaning alone is timed on training logs and on long adversarial lines (on which the reference's own
patterns take quadratic time), at two sizes, to show that its time grows linearly.

Beside it, the published figures: the paper's own trajectories (ReAct-SUPER on GPT-4o, Expert set;
a folder of ``<task>/history.ipynb`` given by ``--paper`` or ``$SUPER_BENCH_REFERENCE_TRAJECTORIES``)
imported with ``super-bench import-trajectories``: how fast, and whether the scores they carry come
out within the paper's range (output match 14-17%, landmarks 34-46%).

    python benchmarks/bench_scoring.py [--tasks 2000] [--megabytes 40] [--paper DIR] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

from bench_viewer import log_text, make_run
from common import Row, median, seconds, super_bench, table, timed

TARGET = 1000  # trajectories per second
_reference = os.environ.get("SUPER_BENCH_REFERENCE_TRAJECTORIES")
PAPER = Path(_reference) / "react-super_expert" if _reference else None
PUBLISHED = {"output_match": (0.14, 0.17), "landmarks": (0.34, 0.46)}  # GPT-4o, ReAct-SUPER, Expert
_baseline = os.environ.get("SUPER_BENCH_BASELINE")
BASELINE = Path(_baseline) if _baseline else None
WORKER = Path(__file__).with_name("rescore_worker.py")


def parse_all(run: Path) -> int:
    count = 0
    for path in (run / "tasks").glob("*/trajectory.json"):
        json.loads(path.read_bytes())
        count += 1
    return count


def unprinted_answer(rng: random.Random) -> dict[str, float]:
    """Two values of four decimals, from 10 to 21: the logs print no such number."""
    return {"acc": round(10 + rng.random(), 4), "f1": round(20 + rng.random(), 4)}


@contextmanager
def untraced_answers() -> Iterator[None]:
    """Re-scoring as it was before answers were traced: scoring's ``trace_answer`` traces nothing."""
    import super_bench.scoring

    # A plain function: a mock would keep every call's steps alive, and the garbage collector's work on
    # them would be timed too.
    with mock.patch.object(super_bench.scoring, "trace_answer", _trace_nothing):
        yield


def _trace_nothing(submission: Any, steps: Any, shown: Any = None, grammar: Any = None) -> None:
    return None


def rows(n_tasks: int, megabytes: float, repeats: int = 3) -> list[Row]:
    from super_bench.runner.rescore import rescore

    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        run = make_run(Path(tmp) / "run", n_tasks, megabytes)
        silent = make_run(Path(tmp) / "silent", n_tasks, megabytes, answer=unprinted_answer, shown=False)
        parse_all(run)  # once, so that every variant reads from the page cache
        parse_all(silent)
        ours, reference, cli, cleaned, unprinted, untraced = [], [], [], [], [], []
        for repeat in range(repeats):
            # Traced and untraced in turn, each first in every other repeat: whichever runs first in a
            # repeat pays for what the commands between repeats left in the caches.
            for traced in (True, False) if repeat % 2 == 0 else (False, True):
                with nullcontext() if traced else untraced_answers():
                    start = time.perf_counter()
                    outcome = rescore(run)
                    (ours if traced else untraced).append(time.perf_counter() - start)
                if len(outcome.results) != n_tasks or any(r.metrics.landmarks != 0.5 for r in outcome.results):
                    raise RuntimeError("re-scoring lost tasks or graded the landmarks wrongly")
                if any(r.answer_provenance != ("observed" if traced else None) for r in outcome.results):
                    raise RuntimeError("a printed answer was not found, or answers were traced with tracing off")
            start = time.perf_counter()
            parse_all(run)
            reference.append(time.perf_counter() - start)
            cli.append(timed([*super_bench(), "score", str(run), "--in-place"])[0])
            start = time.perf_counter()
            outcome = rescore(run, "reference")
            cleaned.append(time.perf_counter() - start)
            if any(r.metrics.landmarks != 0.5 for r in outcome.results):
                raise RuntimeError("reference mode graded the landmarks wrongly")
            start = time.perf_counter()
            outcome = rescore(silent)
            unprinted.append(time.perf_counter() - start)
            if any(r.answer_provenance != "unobserved" for r in outcome.results):
                raise RuntimeError("an answer the logs never print was found in them")
    mine, raw, command, ref_mode = median(ours), median(reference), median(cli), median(cleaned)
    searched, plain = median(unprinted), median(untraced)
    speed, raw_speed, cli_speed = n_tasks / mine, n_tasks / raw, n_tasks / command
    where = f"{n_tasks} trajectories, {megabytes:g} MB"
    return [
        Row(
            "re-scoring",
            f"{where}, in process",
            f"{speed:.0f} trajectories/s ({seconds(mine)})",
            f"{raw_speed:.0f} trajectories/s (json.loads of each file)",
            mine / raw,
            f">= {TARGET} trajectories/s",
            speed >= TARGET,
        ),
        Row(
            "re-scoring",
            f"{where}, super-bench score --in-place",
            f"{cli_speed:.0f} trajectories/s ({seconds(command)}, with the command's start-up)",
            f"{speed:.0f} trajectories/s (in process)",
            command / mine,
        ),
        Row(
            "re-scoring",
            f"{where}, answer provenance traced against not",
            f"{speed:.0f} trajectories/s (traced)",
            f"{n_tasks / plain:.0f} trajectories/s (not traced)",
            mine / plain,
        ),
        Row(
            "re-scoring",
            f"{where}, answers never printed (every output searched through for them)",
            f"{n_tasks / searched:.0f} trajectories/s ({seconds(searched)})",
            f"{speed:.0f} trajectories/s (answers printed)",
            searched / mine,
        ),
        Row(
            "re-scoring",
            f"{where}, --mode reference (every output cleaned)",
            f"{n_tasks / ref_mode:.0f} trajectories/s ({seconds(ref_mode)})",
            f"{speed:.0f} trajectories/s (corrected mode)",
            ref_mode / mine,
        ),
    ]


def baseline_rows(n_tasks: int, megabytes: float, baseline: Path | None, rounds: int = 15) -> list[Row]:
    """The same run re-scored by an earlier release (its ``src`` folder) and by this one, in turn, in CPU time:
    each round times both, in alternating order, so that the machine's drift falls on both alike."""
    what = f"{n_tasks} trajectories, {megabytes:g} MB, against an earlier release"
    if baseline is None or not (baseline / "super_bench").is_dir():
        return [Row("re-scoring", what, "not measured: give --baseline SRC (an earlier release's src folder)")]
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
        ours = make_run(Path(tmp) / "ours", n_tasks, megabytes)
        theirs = as_written_before(ours, Path(tmp) / "theirs", baseline)
        with _Worker(ours, None, n_tasks) as current, _Worker(theirs, baseline, n_tasks) as earlier:
            mine: list[float] = []
            before: list[float] = []
            for i in range(rounds):
                pair = (current, earlier) if i % 2 == 0 else (earlier, current)
                for worker in pair:
                    (mine if worker is current else before).append(worker.rescore())
    ratios = [m / b for m, b in zip(mine, before)]
    ratio = median(ratios)
    return [
        Row(
            "re-scoring",
            f"{what} ({baseline}), CPU time, median of {rounds} rounds",
            f"{n_tasks / median(mine):.0f} trajectories/s (this release, answers traced)",
            f"{n_tasks / median(before):.0f} trajectories/s (the earlier release)",
            ratio,
            "<= 1.1x",
            ratio <= 1.1,
        )
    ]


def as_written_before(run: Path, target: Path, baseline: Path) -> Path:
    """A copy of ``run`` as the release at ``baseline`` wrote it: its trajectories without the fields that
    release does not know (each at its default here, or this fails), its rows likewise in that release's schema
    version (a release reads only the rows it could have written), and without a summary."""
    from super_bench.trajectory import Step, Trajectory

    known = json.loads(
        subprocess.run(
            [sys.executable, "-c", _FIELDS],
            env={**os.environ, "PYTHONPATH": str(baseline.resolve())},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    (target / "tasks").mkdir(parents=True)
    shutil.copy2(run / "tasks.jsonl", target / "tasks.jsonl")
    defaults = {
        "trajectory": Trajectory.model_validate({"task_id": "", "query": ""}).model_dump(mode="json"),
        "step": Step.model_validate(
            {"index": 0, "action": {"type": "execute"}, "start_time": 0, "end_time": 0}
        ).model_dump(mode="json"),
    }
    for path in (run / "tasks").glob("*/trajectory.json"):
        data = json.loads(path.read_bytes())
        _drop_unknown(data, known["trajectory"], defaults["trajectory"], path)
        for step in data["steps"]:
            _drop_unknown(step, known["step"], defaults["step"], path)
        folder = target / "tasks" / path.parent.name
        folder.mkdir()
        (folder / "trajectory.json").write_text(json.dumps(data, indent=1))
    rows = []
    for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = {k: v for k, v in json.loads(line).items() if k in known["row"]}
        rows.append(json.dumps({**row, "schema_version": known["version"]}) + "\n")
    (target / "results.jsonl").write_text("".join(rows), encoding="utf-8")
    return target


# What the release on PYTHONPATH knows of a trajectory, its steps and its rows, and the rows' schema version.
_FIELDS = (
    "import json; from super_bench.trajectory import Step, Trajectory; "
    "from super_bench.runner.results import TaskResult; from super_bench.runner.records import RUN_SCHEMA_VERSION; "
    "print(json.dumps({'trajectory': list(Trajectory.model_fields), 'step': list(Step.model_fields), "
    "'row': list(TaskResult.model_fields), 'version': RUN_SCHEMA_VERSION}))"
)


def _drop_unknown(record: dict[str, Any], known: list[str], defaults: dict[str, Any], path: Path) -> None:
    for key in [k for k in record if k not in known]:
        if record[key] != defaults.get(key, object()):
            raise RuntimeError(f"{path}: the earlier release cannot read {key!r}, and it is not at its default")
        del record[key]


class _Worker:
    """A ``rescore_worker.py`` process re-scoring one run, with ``source`` (an earlier release) first on its path."""

    def __init__(self, run: Path, source: Path | None, n_tasks: int) -> None:
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source.resolve()), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        package, _, scored = self._line().rpartition(" ")
        if source is not None and not Path(package).resolve().is_relative_to(source.resolve()):
            raise RuntimeError(f"the baseline worker imported super_bench from {package}, not from {source}")
        if int(scored) != n_tasks:
            raise RuntimeError(f"{package} scored {scored} of the {n_tasks} trajectories: it cannot read this run")

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the re-scoring worker exited with status {self.process.wait()}")
        return line.strip()

    def rescore(self) -> float:
        """The CPU seconds of one re-scoring."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return float(self._line())

    def __enter__(self) -> _Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


PROGRESS = "Receiving objects:  45% (45/100)\r 12.3 MB/s\r\x1b[31mgcc -c x.c\x1b[0m\n 45% [==>  ] 45 / 100\n"


def cleaning_rows(megabytes: float = 2.0, repeats: int = 3) -> list[Row]:
    """The reference cleaning on logs and on adversarial lines: throughput, and the time at four times the
    size (linear: about 4x; quadratic, as the reference's patterns are on such lines: about 16x)."""
    from super_bench.scoring.cleaning import reference_clean

    size = int(megabytes * 1e6)
    cases = {
        "training log": lambda n: log_text(random.Random(0), n),
        "pip and git progress": lambda n: (PROGRESS * (n // len(PROGRESS) + 1))[:n],
        "one long line of colons and counts": lambda n: ("a: 5% (1/2 " * (n // 11 + 1))[:n] + "\n",
        "one long line of % and [": lambda n: ("%[" * (n // 2 + 1))[:n] + "\n",
    }
    out = []
    for case, make in cases.items():
        times = []
        for n in (size, 4 * size):
            text = make(n)
            runs = []
            for _ in range(repeats):
                start = time.perf_counter()
                reference_clean(text)
                runs.append(time.perf_counter() - start)
            times.append(median(runs))
        growth = times[1] / times[0]
        out.append(
            Row(
                "reference cleaning",
                f"{case}, {megabytes:g} MB and 4x that",
                f"{megabytes / times[0]:.0f} MB/s ({seconds(times[0])}; 4x the text: {growth:.1f}x the time)",
                "",
                None,
                "linear: 4x the text, under 8x the time",
                growth < 8,
            )
        )
    return out


def paper_rows(folder: Path | None) -> list[Row]:
    """Import the paper's trajectories; their scores against the published range."""
    from super_bench.runner.importer import find_notebooks, import_trajectories

    if folder is None or not folder.is_dir():
        return [Row("published figures", "the paper's trajectories", "not measured: give --paper DIR")]
    with tempfile.TemporaryDirectory(prefix="bench-paper-") as tmp:
        start = time.perf_counter()
        outcome = import_trajectories(folder, Path(tmp) / "run")
        took = time.perf_counter() - start
    count = len(find_notebooks(folder))
    means = {name: outcome.run.summary.metrics.get(name) for name in PUBLISHED}
    scores = ", ".join(f"{name} {value:.1%}" for name, value in means.items() if value is not None)
    published = ", ".join(f"{name} {low:.0%}-{high:.0%}" for name, (low, high) in PUBLISHED.items())
    # The paper gives whole percents, so half a point either side is the same figure.
    within = all(
        v is not None and low - 0.005 <= v <= high + 0.005 for v, (low, high) in zip(means.values(), PUBLISHED.values())
    )
    return [
        Row(
            "published figures",
            f"the paper's {count} trajectories, imported",
            f"{scores}; {count / took:.0f} notebooks/s ({seconds(took)})",
            f"the paper: {published}",
            None,
            "within the paper's range",
            within,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=40.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paper", type=Path, default=PAPER, help="The paper's trajectories (a run folder).")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="An earlier release's src folder.")
    args = parser.parse_args()
    measured = rows(args.tasks, args.megabytes, args.repeats) + baseline_rows(args.tasks, args.megabytes, args.baseline)
    print(table(measured + cleaning_rows() + paper_rows(args.paper)))


if __name__ == "__main__":
    main()

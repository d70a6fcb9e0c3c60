"""An output longer than the harness holds in memory goes to a file of the task's record (``kernel.spill``): the file
holds the text the in-memory buffer would have held, the model's cleaned head and tail are what the in-memory
cleaning gives, the landmarks are found where the search of the whole output finds them, the trajectory keeps a
head and a tail and names the file, and a ``MemoryError`` or a full disk ends the step with an error that says so
(docs/performance.md, "Huge output in a file"; docs/threat-model.md, the accounting table)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.scoring.test_landmark_search import FLAGS, _compiles, _pattern, _plain
from tests.support.helpers import make_task

from super_bench import Action, Environment, RunConfig, run, score_trajectory
from super_bench.environment import EnvConfig
from super_bench.environment.kernel import output as output_module
from super_bench.environment.kernel import spill as spill_module
from super_bench.environment.kernel.output import OutputBuffer, cap_text, clean_and_cap
from super_bench.environment.kernel.spill import Spilled, SpillFile, SpillFolder, joined
from super_bench.runner.rescore import rescore
from super_bench.sandbox import SandboxConfig
from super_bench.scoring import windows
from super_bench.scoring.landmarks import landmark_steps
from super_bench.spilled import OutputFile, excerpt
from super_bench.trajectory import Step, Trajectory

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
# What a cell prints: newlines, carriage returns, ANSI codes (an OSC ended by ESC \ too), control characters, wide
# characters and half a surrogate pair.
PIECES = st.text(alphabet=st.sampled_from("ab \n\n\r\r\x1b[32m]\\\x07\x00é€😀"), max_size=40)


_SIZES = {
    "_BLOCK": (spill_module, "_BLOCK"),  # a spilled block
    "_COMPACT": (spill_module, "_COMPACT"),  # dropped bytes before a compaction
    "SPILL_CHARS": (spill_module, "SPILL_CHARS"),  # output held in memory
    "CLEAN_BLOCK": (output_module, "_BLOCK"),  # a block of lines cleaned at once
    "WINDOW": (windows, "WINDOW"),  # a landmark's search window
    "OVERLAP": (windows, "OVERLAP"),
}


@contextlib.contextmanager
def _small(**sizes: int) -> Iterator[None]:
    """The block, compaction and window sizes of the modules made small, so that a few characters exercise them."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in sizes.items():
            patch.setattr(*_SIZES[name], value)
        yield


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as file:
        return file.read()


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(PIECES, max_size=30),
    max_chars=st.integers(1, 200),
    spill_chars=st.integers(0, 60),
    block=st.integers(1, 50),
    compact=st.integers(0, 100),
)
def test_an_output_in_a_file_is_the_text_the_buffer_holds_in_memory(
    pieces: list[str], max_chars: int, spill_chars: int, block: int, compact: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp, _small(_BLOCK=block, _COMPACT=compact):
        folder = SpillFolder(Path(tmp))
        held, spilled = OutputBuffer(max_chars), OutputBuffer(max_chars, folder, spill_chars)
        for piece in pieces:
            held.append(piece)
            spilled.append(piece)
            assert len(spilled) == len(held)
        text, result = held.text(), spilled.finish()
        assert spilled.dropped == held.dropped
        if isinstance(result, str):
            assert result == text and not (Path(tmp) / "outputs").exists()
            return
        assert _read(result.path) == text and result.chars == len(text)
        # The kept file alone: no compacted or unfinished copy left beside it.
        assert [p.name for p in (Path(tmp) / "outputs").iterdir()] == [result.path.name]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(PIECES, max_size=12).map("".join), limit=st.integers(1, 80), block=st.integers(1, 16))
def test_the_models_copy_of_an_output_in_a_file_is_the_cleaning_of_the_text(text: str, limit: int, block: int) -> None:
    expected = clean_and_cap(text, limit)
    with tempfile.TemporaryDirectory() as tmp, _small(CLEAN_BLOCK=block):
        path = SpillFolder(Path(tmp))()
        path.write_text(text, encoding="utf-8", newline="")
        assert clean_and_cap(Spilled(path, len(text)), limit) == expected
        kept = OutputFile(name=f"outputs/{path.name}", chars=len(text))
        assert excerpt(Path(tmp), kept, limit) == cap_text(text, limit)


def _spilled_step(record: Path, index: int, text: str) -> Step:
    path = record / "outputs" / f"{index}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    name = f"outputs/{index}.txt"
    step = Step(
        index=index,
        action=Action.execute("print(1)"),
        output=cap_text(text, 8),
        output_file=OutputFile(name=name, chars=len(text)),
        start_time=T0,
        end_time=T0,
    )
    return step.kept_in(record)


OUTPUT = st.text(alphabet=st.sampled_from(" \n\n  \tab1_B.\r:é"), max_size=60)


@settings(max_examples=600, deadline=None)
@given(
    outputs=st.lists(st.tuples(OUTPUT, st.booleans()), min_size=1, max_size=4),
    bodies=st.lists(st.tuples(FLAGS, _pattern()).map("".join), min_size=1, max_size=3),
    window=st.integers(2, 24),
    overlap=st.integers(1, 12),
)
def test_landmarks_in_outputs_kept_in_files_are_found_where_the_whole_outputs_search_finds_them(
    outputs: list[tuple[str, bool]], bodies: list[str], window: int, overlap: int
) -> None:
    landmarks = [body for body in bodies if _compiles(body)]
    texts = [text for text, _ in outputs]
    with tempfile.TemporaryDirectory() as tmp, _small(WINDOW=window, OVERLAP=overlap):
        steps = [
            _spilled_step(Path(tmp), i, text)
            if in_file
            else Step(index=i, action=Action.execute("1"), output=text, start_time=T0, end_time=T0)
            for i, (text, in_file) in enumerate(outputs)
        ]
        held = [
            Step(index=i, action=Action.execute("1"), output=t, start_time=T0, end_time=T0) for i, t in enumerate(texts)
        ]
        # The answer of the outputs held in memory (the scorer's in-memory path), and of the plain search.
        assert landmark_steps(landmarks, steps) == landmark_steps(landmarks, held) == _plain(landmarks, texts)


def test_a_landmark_is_found_in_a_file_by_windows_or_refuted_by_its_piece_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = ("epoch 1 loss 0.25\n" * 2000) + "training finished: accuracy 0.9137\n" + "tail\n" * 500
    step = _spilled_step(tmp_path, 0, text)
    whole: list[str] = []
    monkeypatch.setattr(windows, "_whole", lambda *args: whole.append(args[0].pattern) or False)
    monkeypatch.setattr(windows, "WINDOW", 4096)
    landmarks = [r"training finished: accuracy 0\.9\d+", r"loss 0\.25$", r"loss 0\.\d+$", "Epoch 9"]
    assert landmark_steps(landmarks, [step]) == [0, None, None, None]
    # Found in a window; shorter than the overlap (no window held it); its piece is nowhere. Only a pattern with
    # an unbounded repetition that reads the end needed the whole output.
    assert whole == [r"loss 0\.\d+$"]


@pytest.mark.parametrize("name", ["../trajectory.json", "/etc/passwd", "outputs/../../x.txt", "outputs/a.txt"])
def test_a_trajectory_names_an_output_file_only_in_its_own_outputs_folder(name: str) -> None:
    with pytest.raises(ValidationError):
        OutputFile(name=name, chars=1)


@pytest.mark.parametrize("planted", ["file", "folder", "fifo"])
def test_an_output_file_planted_as_a_link_is_not_followed(tmp_path: Path, planted: str) -> None:
    """Nor waited on, where it is a FIFO."""
    secret = tmp_path / "secret.txt"
    secret.write_text("training finished: accuracy 0.9137\n")
    record = tmp_path / "record"
    step = _spilled_step(record, 0, "nothing here\n")
    if planted == "file":
        (record / "outputs" / "0.txt").unlink()
        (record / "outputs" / "0.txt").symlink_to(secret)
    elif planted == "fifo":
        (record / "outputs" / "0.txt").unlink()
        os.mkfifo(record / "outputs" / "0.txt")
    else:
        elsewhere = tmp_path / "elsewhere"
        (record / "outputs").rename(elsewhere)
        (elsewhere / "0.txt").write_text(secret.read_text())
        (record / "outputs").symlink_to(elsewhere)
    assert landmark_steps([r"accuracy 0\.9\d+"], [step]) == [None]


def test_a_spilled_file_holds_no_more_than_the_tasks_disk_limit(tmp_path: Path) -> None:
    limit = 4096
    with _small(_BLOCK=100):  # the compaction at its own size: the disk limit alone bounds the file
        file = SpillFile(tmp_path / "1.txt", 1_000_000, max_bytes=limit)
        biggest = 0
        for i in range(2000):
            file.append(f"line {i} 😀\n")
            biggest = max(biggest, os.path.getsize(file.path))
        result = file.finish()
    assert biggest <= 2 * limit + 4 * 100
    assert result.path.stat().st_size <= limit + 200 and result.dropped > 0
    assert _read(result.path).endswith("line 1999 😀\n")


def _environment(tmp_path: Path, record: Path | None, **settings: Any) -> Environment:
    sandbox = SandboxConfig(root=tmp_path / "sandboxes", **settings.pop("sandbox", {}))
    return Environment(EnvConfig(sandbox=sandbox, cell_timeout=60, **settings), record=record)


CELL = (
    "import sys\n"
    "for i in range(30_000):\n"
    "    sys.stdout.write(f'\\r{i % 100:3d}%|{\"#\" * (i % 40)}| \\x1b[32m{i}\\x1b[0m')\n"
    "    if i % 3000 == 0: sys.stdout.write('\\nepoch é€😀 done\\n')\n"
    "print('training finished: accuracy 0.9137')\n"
)


def test_a_cells_long_output_goes_to_the_tasks_record_and_is_graded_and_shown_as_if_held(tmp_path: Path) -> None:
    task = make_task(landmarks=[r"training finished: accuracy 0\.9\d+", r"epoch é€😀 done", r"accuracy 0\.1"])
    held = _environment(tmp_path, None)
    record = tmp_path / "record"
    with _small(SPILL_CHARS=10_000):
        spilled = _environment(tmp_path, record)
        try:
            held.reset(task)
            spilled.reset(task)
            expected = held.step(Action.execute(CELL))
            step = spilled.step(Action.execute(CELL))
        finally:
            held.close()
            trajectory = spilled.close()
    assert trajectory is not None and step.output_file is not None and expected.output is not None
    assert step.output_file.name == "outputs/0.txt" and step.output_file.chars == len(expected.output)
    assert _read(record / "outputs" / "0.txt") == expected.output
    assert step.observation == expected.observation
    # The trajectory keeps the head and the tail, as the model's copy is cut; the whole is in the file alone.
    assert step.output == cap_text(expected.output, EnvConfig().observation_limit) != expected.output
    assert score_trajectory(trajectory, task)[0].landmarks == pytest.approx(2 / 3)
    trajectory.save(record)
    assert len((record / "trajectory.json").read_bytes()) < len(expected.output)
    loaded = Trajectory.load(record)
    assert score_trajectory(loaded, task)[0].landmarks == pytest.approx(2 / 3)
    assert json.loads((record / "trajectory.json").read_text())["steps"][0]["output_file"] == {
        "name": "outputs/0.txt",
        "chars": len(expected.output),
    }


@pytest.mark.parametrize(
    ("owner", "name", "error"),
    [
        (SpillFile, "append", MemoryError()),
        (SpillFile, "finish", MemoryError()),
        (SpillFile, "append", OSError(errno.ENOSPC, "No space left on device")),
        (output_module, "_file_blocks", MemoryError()),
    ],
)
def test_a_memory_error_or_full_disk_while_spilling_ends_the_step_with_an_error_and_removes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, error: BaseException
) -> None:
    real = getattr(owner, name)
    calls: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise error
        return real(*args, **kwargs)

    record = tmp_path / "record"
    monkeypatch.setattr(spill_module, "SPILL_CHARS", 1000)
    env = _environment(tmp_path, record)
    try:
        env.reset(make_task())
        monkeypatch.setattr(owner, name, failing)
        step = env.step(Action.execute("for i in range(300): print('x' * 30)"))
        assert calls and step.outcome == "error" and step.output_file is None
        said = "ran out of memory" if isinstance(error, MemoryError) else "could not write this cell's output"
        assert said in step.observation
        assert list((record / "outputs").iterdir()) == []  # the file was let go with the output
        monkeypatch.undo()
        monkeypatch.setattr(spill_module, "SPILL_CHARS", 1000)
        after = env.step(Action.execute("for i in range(300): print('y' * 30)"))
        assert after.outcome == "ok" and after.output_file is not None
        assert _read(record / after.output_file.name) == ("y" * 30 + "\n") * 300
    finally:
        env.close()


def test_a_task_run_again_starts_with_no_output_files_of_the_run_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill_module, "SPILL_CHARS", 1000)
    actions = tmp_path / "actions.json"
    # The landmark in the middle: the head and tail the trajectory keeps (1,000 characters) do not hold it.
    code = "for i in range(100): print('x' * 30)\nprint('training finished: accuracy 0.9137')\n"
    code += "for i in range(200): print('y' * 30)"
    actions.write_text(
        json.dumps([{"type": "execute", "content": code}, {"type": "submit", "content": {"accuracy": 0.9137}}])
    )
    task = make_task(landmarks=[r"accuracy 0\.9\d+"], answer={"accuracy": 0.9137})
    sandbox = SandboxConfig(backend="local", root=tmp_path / "sandboxes")
    env = EnvConfig(cell_timeout=60, observation_limit=1000, sandbox=sandbox)
    config = RunConfig(env=env, agent=f"replay:{actions}", out=tmp_path / "run")
    first = run(config, tasks=[task], progress=False)
    task_dir = tmp_path / "run" / "tasks" / task.task_id
    assert "accuracy 0.9137" in _read(task_dir / "outputs" / "0.txt")
    assert "accuracy 0.9137" not in Trajectory.load(task_dir).steps[0].raw_output
    assert first.results[0].metrics.landmarks == 1.0
    # Re-scored offline, in place or in a copy, the landmark is found in the file as the run found it.
    assert rescore(tmp_path / "run").results[0].metrics.landmarks == 1.0
    assert rescore(tmp_path / "run", out=tmp_path / "copy").results[0].metrics.landmarks == 1.0
    (task_dir / "outputs" / "7.txt").write_text("left by the run before")
    again = run(config.model_copy(update={"redo": True}), tasks=[task], progress=False)
    assert sorted(p.name for p in (task_dir / "outputs").iterdir()) == ["0.txt"]
    assert again.results[0].metrics.landmarks == 1.0


@pytest.mark.parametrize(("first_in_file", "second_in_file"), [(True, False), (False, True), (True, True)])
def test_two_results_of_one_cell_join_into_one_file(tmp_path: Path, first_in_file: bool, second_in_file: bool) -> None:
    """A pre-executed cell's output before and after its interrupt, one of them or both in files."""
    folder = SpillFolder(tmp_path)

    def part(text: str, in_file: bool) -> str | Spilled:
        if not in_file:
            return text
        path = folder()
        path.write_text(text, encoding="utf-8")
        return Spilled(path, len(text), dropped=3)

    first, second = part("before é\n" * 3, first_in_file), part("after 😀\n" * 2, second_in_file)
    result = joined(first, second, folder)
    assert isinstance(result, Spilled)
    assert _read(result.path) == "before é\n" * 3 + "after 😀\n" * 2 and result.chars == 27 + 16
    assert result.dropped == 3 * (first_in_file + second_in_file)
    assert [p.name for p in (tmp_path / "outputs").iterdir()] == [result.path.name]  # the parts' files let go
    assert joined("a", "b", None) == "ab"


def test_a_surrogate_pair_split_across_pieces_is_one_character_in_the_file_and_a_lone_half_is_replaced(
    tmp_path: Path,
) -> None:
    with _small(_BLOCK=1):
        buffer = OutputBuffer(1000, SpillFolder(tmp_path), spill_chars=0)
        for piece in ["a\ud83d", "\ude00b", "\ud800", "c\udbff"]:
            buffer.append(piece)
        result = buffer.finish()
    assert isinstance(result, Spilled)
    assert _read(result.path) == "a😀b\ufffdc\ufffd" and result.chars == 6

"""A long output costs the harness a bounded multiple of its size, never its JSON: the kernel sends it in bounded
messages, the harness gathers them into blocks and joins them once, the landmarks search one copy of it with
newlines as spaces, and the records write it piece by piece, byte for byte as pydantic writes them
(docs/performance.md, "Huge output"). A ``MemoryError`` while holding it ends the step with an error."""

from __future__ import annotations

import io
import secrets
import sys
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.helpers import assert_head_and_tail, make_task

from super_bench import Action, Environment, score_trajectory
from super_bench import trajectory as trajectory_module
from super_bench.environment.kernel import output as output_module
from super_bench.environment.kernel.output import OutputBuffer
from super_bench.sandbox.in_task.kernel_boot import STREAM_PIECE
from super_bench.trajectory import Step, Trajectory, write_step_line

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
# What a cell prints: quotes, backslashes, control characters, ANSI codes, carriage returns, any language.
TEXT = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.sampled_from('ab"\\\n\r\t\x00\x1b\x7f\x08\x0c\u2028é😀\ud800'), max_size=30),
)


def _step(index: int, output: str | None, **fields: Any) -> Step:
    return Step(index=index, action=Action.execute("print(1)"), output=output, start_time=T0, end_time=T0, **fields)


def _trajectory(outputs: list[str | None], thought: str | None = None) -> Trajectory:
    steps = [_step(i, output, observation="seen", thought=thought) for i, output in enumerate(outputs)]
    return Trajectory(task_id="t", query="q", steps=steps, started_at=T0, metadata={"note": 1.5e16})


def _saved(trajectory: Trajectory, directory: Path) -> bytes:
    return trajectory.save(directory).read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outputs=st.lists(st.one_of(st.none(), TEXT), min_size=1, max_size=4), piece=st.integers(1, 5))
def test_records_with_long_outputs_are_written_byte_for_byte_as_pydantic_writes_them(
    tmp_path: Path, outputs: list[str | None], piece: int
) -> None:
    trajectory = _trajectory(outputs)
    whole = [step.__pydantic_serializer__.to_json(step) + b"\n" for step in trajectory.steps]
    whole_trajectory = trajectory.__pydantic_serializer__.to_json(trajectory, indent=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trajectory_module, "STREAMED_CHARS", piece)  # every output longer than a few characters
        patch.setattr(trajectory_module, "_PIECE_CHARS", piece)  # written a few characters at a time
        for step, expected in zip(trajectory.steps, whole):
            line = io.BytesIO()
            write_step_line(line, step)
            assert line.getvalue() == expected
        assert _saved(trajectory, tmp_path) == whole_trajectory
    assert Trajectory.load(tmp_path) == trajectory


def test_a_text_holding_the_marker_gets_the_record_encoded_whole(tmp_path: Path) -> None:
    marker = "0123456789abcdef" * 2
    trajectory = _trajectory(["x" * 40, "y" * 40], thought=f'a thought that quotes "{marker}"')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trajectory_module, "STREAMED_CHARS", 8)
        patch.setattr(secrets, "token_hex", lambda _: marker)
        assert _saved(trajectory, tmp_path) == trajectory.__pydantic_serializer__.to_json(trajectory, indent=1)


def _peak(action: Callable[[], object]) -> int:
    """Bytes allocated at most while ``action`` ran, above what was allocated before it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        action()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_writing_a_long_output_holds_no_copy_of_its_json(tmp_path: Path) -> None:
    bar = "\r\x1b[32m" + "#" * 40 + "\x1b[0m epoch 3 loss 0.25"  # its JSON is longer than itself
    output = bar * (20_000_000 // len(bar))
    trajectory = _trajectory([output])
    with (tmp_path / "steps.jsonl").open("wb") as log:
        assert _peak(lambda: write_step_line(log, trajectory.steps[0])) < len(output) // 4
    assert _peak(lambda: trajectory.save(tmp_path)) < len(output) // 4
    assert Trajectory.load(tmp_path).steps[0].output == output


def _kept(full: str, limit: int) -> str:
    if len(full) <= limit:
        return full
    head, tail = limit // 4, limit - limit // 4
    marker = f"\n[... {len(full) - head - tail:,} characters of output dropped by super-bench ...]\n"
    return f"{full[:head]}{marker}{full[len(full) - tail :]}"


# Pieces as a cell writes them, a wider kind of character coming at any point (ASCII, Latin-1, BMP, astral).
PIECES = st.lists(st.text(alphabet=st.sampled_from("ab\n \x00é€😀"), max_size=40), max_size=40)


@settings(max_examples=300, deadline=None)
@given(pieces=PIECES, limit=st.integers(1, 500), block=st.integers(1, 80), peeks=st.integers(0, 3))
def test_an_output_gathered_in_blocks_is_kept_as_one_joined_would_be(
    pieces: list[str], limit: int, block: int, peeks: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output_module, "_BLOCK", block)  # gathered a few characters at a time
        buffer = OutputBuffer(max_chars=limit)
        for i, piece in enumerate(pieces):
            buffer.append(piece)
            if peeks and i % (5 * peeks) == 0:
                assert buffer.text() == _kept("".join(pieces[: i + 1]), limit)
        full = "".join(pieces)
        assert buffer.take() == _kept(full, limit) and buffer.take() == "" and buffer.dropped == 0


@settings(max_examples=200, deadline=None)
@given(pieces=PIECES, limits=st.lists(st.integers(1, 300), min_size=2), block=st.integers(1, 80))
def test_an_output_gathered_in_blocks_under_a_moving_ceiling_keeps_a_head_and_a_tail(
    pieces: list[str], limits: list[int], block: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output_module, "_BLOCK", block)
        buffer = OutputBuffer(max_chars=limits[0])
        for i, piece in enumerate(pieces):
            buffer.max_chars = limits[i % len(limits)]
            buffer.append(piece)
        text = buffer.text()
    assert_head_and_tail("".join(pieces), text, buffer.dropped, buffer.max_chars)


@pytest.mark.parametrize(("piece", "late"), [("epoch 1 loss 0.25 " * 3641, ""), ("\r 42%|####  | 42/100", "")])
def test_a_long_output_is_held_in_blocks_and_joined_once(piece: str, late: str) -> None:
    """Pieces as the kernel sends them (64 KiB) or as a progress bar writes them (a few dozen characters, each a
    Python object twice its size): gathered into blocks, then joined once, so the text and its blocks, twice it."""
    pieces = 20_000_000 // len(piece)
    tracemalloc.start()
    try:
        buffer = OutputBuffer(128_000_000)
        for _ in range(pieces):
            buffer.append(piece)
        before_join = tracemalloc.get_traced_memory()[0]
        text = buffer.take()
        peak, held = tracemalloc.get_traced_memory()[1], tracemalloc.get_traced_memory()[0]
        size = sys.getsizeof(text)
        del text
        left = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert before_join < 1.05 * size and peak < 2.1 * size
    assert held >= size and left < size // 100  # nothing else holds it: let go, it is freed


def test_an_output_gathered_in_blocks_is_the_text_that_came() -> None:
    piece = "ab\u00e9\n" * 20_000
    buffer = OutputBuffer(128_000_000)
    for i in range(40):
        buffer.append(piece + str(i))
    text = buffer.take()
    assert text == "".join(piece + str(i) for i in range(40))
    assert sys.getrefcount(text) == 2  # this name and the call's argument: nothing else holds it


def test_a_long_write_reaches_the_harness_in_bounded_messages_and_whole(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    append = OutputBuffer.append

    def counted(self: OutputBuffer, text: str) -> None:
        sizes.append(len(text))
        append(self, text)

    monkeypatch.setattr(OutputBuffer, "append", counted)
    step = env.step(Action.execute("import sys\nsys.stdout.write('ab\\u00e9\\n' * 300_000)\nprint('end')"))
    assert step.raw_output == "ab\u00e9\n" * 300_000 + "end\n"
    assert max(sizes) <= STREAM_PIECE and len(sizes) >= 1_200_000 // STREAM_PIECE


@pytest.mark.slow
def test_a_twenty_megabyte_cell_is_held_about_once_graded_and_recorded(env_factory: Any, tmp_path: Path) -> None:
    task = make_task(landmarks=[r"training finished: accuracy 0\.9\d+"])
    env = env_factory(cell_timeout=120)
    env.reset(task)
    line = "epoch 1 step 10 loss 0.2500 \x1b[32m####\x1b[0m\r" * 4 + "\n"
    lines = 20_000_000 // len(line)
    code = f"import sys\nsys.stdout.write({line!r} * {lines})\nprint('training finished: accuracy 0.9137')"
    steps: list[Step] = []
    # Receiving it (in messages of STREAM_PIECE characters, gathered into blocks), joining it once, cleaning the
    # agent's copy: the output twice at most (one message of it, as it came once, three times over as it was read).
    peak = _peak(lambda: steps.append(env.step(Action.execute(code))))
    output = line * lines + "training finished: accuracy 0.9137\n"
    assert peak < 2.2 * len(output)
    step = steps[0]
    assert step.raw_output == output
    assert step.observation.startswith("epoch 1 step 10 loss 0.2500 ####\n")
    assert step.observation.endswith("training finished: accuracy 0.9137\n")
    scored: list[Any] = []
    # Graded in one copy of it with newlines as spaces, let go once searched.
    assert _peak(lambda: scored.append(score_trajectory(env.trajectory, task))) < 1.1 * len(output)
    assert scored[0][0].landmarks == 1.0
    with (tmp_path / "steps.jsonl").open("wb") as log:
        write_step_line(log, step)
    env.trajectory.save(tmp_path)
    assert Trajectory.load(tmp_path).steps[0] == step
    assert Step.model_validate_json((tmp_path / "steps.jsonl").read_bytes()) == step


def _failing_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """``owner.name`` raising ``MemoryError`` on its first call once some output has come; the calls counted."""
    real = getattr(owner, name)
    calls: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)
    return calls


@pytest.mark.parametrize(("owner", "name"), [(OutputBuffer, "append"), (OutputBuffer, "text")])
def test_a_memory_error_while_holding_a_cells_output_ends_its_step_with_an_error_that_says_so(
    env: Environment, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str
) -> None:
    calls = _failing_once(monkeypatch, owner, name)
    step = env.step(Action.execute("print('a' * 1000); print('b' * 10)"))
    assert calls and step.outcome == "error"
    assert "ran out of memory holding this cell's output" in step.observation
    assert step.raw_output == step.observation and step.metadata["output_dropped"] >= 10
    monkeypatch.undo()
    after = env.step(Action.execute("print('after')"))  # the buffer was let go, not left broken
    assert (after.outcome, after.observation) == ("ok", "after\n")


def test_a_memory_error_while_cleaning_the_agents_copy_ends_the_step_with_an_error(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from super_bench.environment import env as environment_module

    _failing_once(monkeypatch, environment_module, "clean_and_cap")
    step = env.step(Action.execute("print('x' * 5000)"))
    assert step.outcome == "error" and "ran out of memory" in step.observation
    assert step.metadata["output_dropped"] == 5001
    monkeypatch.undo()
    assert env.step(Action.execute("print('after')")).observation == "after\n"


def test_a_flush_of_more_pieces_than_zeromq_queues_by_default_reaches_the_harness(env: Environment) -> None:
    """One write of 140 MB is one flush of some 2,100 pieces, which the kernel's IOPub thread hands to itself
    through a pipe: with ZeroMQ's default queue there, it waited on itself for ever and the cell timed out."""
    size = 140_000_000
    assert size // STREAM_PIECE > 2_000
    step = env.step(Action.execute(f"import sys; sys.stdout.write('x' * {size}); print('end')"))
    assert step.outcome == "ok", step.observation[-300:]
    assert step.raw_output.endswith("xxxx" + "end\n") and "characters of output dropped" in step.raw_output
    step = env.step(Action.execute("print('after')"))
    assert step.observation == "after\n"

"""A long output costs the harness about twice its size at most, never its JSON or a third copy: the kernel sends
it in bounded messages, the harness joins them once, and the records write it piece by piece, byte for byte as
pydantic writes them (docs/performance.md, "Huge output")."""

from __future__ import annotations

import io
import secrets
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers import make_task

from super_bench import Action, Environment, score_trajectory
from super_bench import trajectory as trajectory_module
from super_bench.kernel.output import OutputBuffer
from super_bench.sandbox.data.kernel_boot import STREAM_PIECE
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
def test_a_twenty_megabyte_cell_is_held_at_most_twice_graded_and_recorded(env_factory: Any, tmp_path: Path) -> None:
    task = make_task(landmarks=[r"training finished: accuracy 0\.9\d+"])
    env = env_factory(cell_timeout=120)
    env.reset(task)
    line = "epoch 1 step 10 loss 0.2500 \x1b[32m####\x1b[0m\r" * 4 + "\n"
    lines = 20_000_000 // len(line)
    code = f"import sys\nsys.stdout.write({line!r} * {lines})\nprint('training finished: accuracy 0.9137')"
    steps: list[Step] = []
    # Receiving it (in messages of STREAM_PIECE characters), joining it once, cleaning the agent's copy: about
    # twice the output (one message of it, as it came before, was held three times over as it was read).
    peak = _peak(lambda: steps.append(env.step(Action.execute(code))))
    output = line * lines + "training finished: accuracy 0.9137\n"
    assert peak < 2.3 * len(output)
    step = steps[0]
    assert step.raw_output == output
    assert step.observation.startswith("epoch 1 step 10 loss 0.2500 ####\n")
    assert step.observation.endswith("training finished: accuracy 0.9137\n")
    metrics, _ = score_trajectory(env.trajectory, task)
    assert metrics.landmarks == 1.0
    with (tmp_path / "steps.jsonl").open("wb") as log:
        write_step_line(log, step)
    env.trajectory.save(tmp_path)
    assert Trajectory.load(tmp_path).steps[0] == step
    assert Step.model_validate_json((tmp_path / "steps.jsonl").read_bytes()) == step

"""The trajectory notebook: valid nbformat 4, laid out as nbformat writes it, the same each time."""

from __future__ import annotations

import base64
import struct
import zlib
from datetime import datetime, timedelta, timezone

import nbformat

from super_bench.actions import Action
from super_bench.notebook import trajectory_to_notebook
from super_bench.trajectory import Figure, Step, Trajectory


def one_pixel_png() -> str:
    """A grey 1x1 PNG, base64-encoded as a cell's display output carries it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode("ascii")


PIXEL = one_pixel_png()


def trajectory() -> Trajectory:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    actions = [
        Action.execute("!git clone repo"),
        Action.execute("print('épochs: 3')"),
        Action(type="edit", content="train.py\n<<<BEFORE_EDIT>>>\na\n<<<AFTER_EDIT>>>\nb"),
        Action(type="interrupt"),
        Action.submit({"accuracy": 0.5}),
    ]
    steps = [
        Step(
            index=i,
            thought=f"thought {i}" if i else None,
            action=action,
            observation="" if i == 0 else f"output {i}\n",
            figures=[Figure(mime="image/png", data=PIXEL)] if i in (1, 3) else [],
            pre_executed=i == 0,
            start_time=start + timedelta(seconds=i),
            end_time=start + timedelta(seconds=i + 0.5),
        )
        for i, action in enumerate(actions)
    ]
    traj = Trajectory(task_id="tinyreg", query="Train it.", agent="react", model="mock/x", steps=steps)
    traj.submitted, traj.submission, traj.stop_reason = True, {"accuracy": 0.5}, "submitted"
    return traj


def test_the_notebook_is_valid_and_written_as_nbformat_writes_it() -> None:
    text = trajectory_to_notebook(trajectory())
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    assert nbformat.writes(notebook) + "\n" == text
    ids = [cell.id for cell in notebook.cells]
    assert len(set(ids)) == len(ids)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code] == ["!git clone repo", "print('épochs: 3')"]
    assert code[0].outputs == [] and code[1].outputs[0].text == "output 1\n"
    # A figure is the cell's display output, as Jupyter keeps it; after a non-Python step, an image in its text.
    assert code[1].outputs[1] == {"output_type": "display_data", "data": {"image/png": PIXEL}, "metadata": {}}
    text_cells = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert "**edit**" in text_cells and "**interrupt**" in text_cells and "thought 2" in text_cells
    assert f"![figure 1](data:image/png;base64,{PIXEL})" in text_cells
    assert '**Submission:** `{"accuracy": 0.5}`' in text_cells
    assert notebook.metadata.super_bench.task_id == "tinyreg"


def test_the_same_trajectory_gives_the_same_notebook() -> None:
    assert trajectory_to_notebook(trajectory()) == trajectory_to_notebook(trajectory())

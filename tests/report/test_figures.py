"""Figures, as SUPER's notebooks show them: the `<Figure size ...>` line in the observation, the image
kept in the step (bounded, and counted against the episode's output limit), and in the notebook export."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tests.support.helpers import make_task

from super_bench import Action, Environment
from super_bench.notebook import save_notebook

pytest.importorskip("matplotlib")  # in the test extras


@pytest.fixture
def env(env_factory: Any) -> Environment:
    """matplotlib is in SUPER's environment, not in the minimal default one: the task's base here is the
    test environment's own Python, which has it."""
    environment: Environment = env_factory(cell_timeout=60, sandbox={"task_python": Path(sys.executable)})
    environment.reset(make_task())
    return environment


PLOT = (
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.title('loss')\nplt.show()\nprint('plotted')"
)


def test_a_figure_is_shown_as_text_and_kept_as_an_image(env: Environment, tmp_path: Path) -> None:
    step = env.step(Action.execute(PLOT))
    assert step.outcome == "ok"
    assert step.observation == "<Figure size 640x480 with 1 Axes>\nplotted\n"
    (figure,) = step.figures
    assert figure.mime == "image/png"
    assert base64.b64decode(figure.data).startswith(b"\x89PNG\r\n\x1a\n")
    # The figure as the last expression of a cell, and a cell with two figures: kept in order.
    step = env.step(Action.execute("fig, ax = plt.subplots()\nax.plot([0, 1])\nfig"))
    assert step.observation.count("<Figure size") == 2 and len(step.figures) == 2
    # Kept in the trajectory and in its notebook, as a Jupyter notebook keeps them.
    save_notebook(env.trajectory, tmp_path)
    notebook = nbformat.read(tmp_path / "trajectory.ipynb", as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [output.output_type for output in code[0].outputs] == ["stream", "display_data"]
    assert code[0].outputs[1].data["image/png"] == figure.data


def test_images_too_large_or_not_base64_are_not_kept_and_the_output_says_so(env: Environment) -> None:
    code = (
        "from IPython.display import publish_display_data as show\n"
        "show({'image/png': 'A' * 4_000_004, 'text/plain': 'huge'})\n"
        "show({'image/png': '<img src=x onerror=alert(1)>', 'text/plain': 'not base64'})\n"
        "show({'image/png': 'iVBORw0K\\nGgo=', 'text/plain': 'in lines'})\n"
        "show({'image/svg+xml': '<svg/>', 'text/plain': 'svg'})\n"
        "show({'image/jpeg': '/9j/4AAQ', 'text/plain': 'jpeg'})\n"
    )
    step = env.step(Action.execute(code))
    assert "an image (image/png, 4,000,004 characters of base64) was not kept" in step.observation
    assert "an image (image/png) was not kept: its data is not base64" in step.observation
    # The lines joined; svg is shown by its text only.
    assert [(f.mime, f.data) for f in step.figures] == [("image/png", "iVBORw0KGgo="), ("image/jpeg", "/9j/4AAQ")]
    assert "svg" in step.observation


def test_a_script_that_shows_a_figure_prints_its_description(env: Environment) -> None:
    env._sandbox.write_file("plot.py", PLOT.encode())
    step = env.step(Action.execute("!python plot.py"))
    assert (step.observation, step.exit_code, step.figures) == ("Figure(640x480)\nplotted\n", 0, [])


def test_figures_count_against_the_episode_output_limit(env_factory: Any) -> None:
    env = env_factory(
        episode_output_limit=40_000, observation_limit=1000, sandbox={"task_python": Path(sys.executable)}
    )
    env.reset(make_task())
    first = env.step(Action.execute(PLOT))
    assert len(first.figures) == 1 and len(first.figures[0].data) > 10_000
    steps = [env.step(Action.execute(PLOT)) for _ in range(3)]
    kept = sum(len(f.data) for step in (first, *steps) for f in step.figures)
    assert kept <= 40_000 and not steps[-1].figures
    assert "within the limit of output kept" in steps[-1].observation
    assert env.trajectory.metadata["output_limit_reached"]["limit"] == 40_000

"""The examples of docs/environment.md on mirrors, packages as of a date and air-gapped runs, run as
written. The one change: the public index of the date example is replaced by one served here (this
test has no internet), which serves the same package with the same upload times."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import tiny_wheel

DOC = Path(__file__).resolve().parents[2] / "docs" / "environment.md"
PUBLIC_INDEX = "https://pypi.org/simple"


def blocks(section: str) -> list[tuple[str, str]]:
    """The (language, code) blocks of a ``###`` section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"### {section}\n", 1)[1].split("\n#", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", body, re.S)


def shell(code: str, cwd: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for line in code.strip().splitlines():
        done = subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, (line, done.stdout[-3000:], done.stderr[-3000:])


def results(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_git_mirror_example(tmp_path: Path) -> None:
    ((language, code),) = blocks("Git mirrors")
    assert language == "bash"
    shell(code, tmp_path)
    for name in ("one-mirror", "mirror-directory"):
        (result,) = results(tmp_path / "runs" / name)
        assert result["metrics"]["output_match"] == 1.0, result  # type: ignore[index]
        recorded = json.loads((tmp_path / "runs" / name / "run.json").read_text())["sandbox"]["git_mirrors"]
        assert list(recorded) == ["https://github.com/super-bench-demo/tinyreg"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_packages_as_of_example(tmp_path: Path) -> None:
    (venv_language, venv), (language, code) = blocks("Packages as of a date")
    assert (venv_language, language) == ("bash", "python") and PUBLIC_INDEX in code
    shell(venv, tmp_path)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    served = {
        "2.31.0": (tiny_wheel(wheels, "requests", 31, version="2.31.0"), "2023-05-22T14:00:00Z"),
        "2.32.0": (tiny_wheel(wheels, "requests", 32, version="2.32.0"), "2024-05-20T16:00:00Z"),
    }
    with package_index({"requests": served}) as (index, requested):
        script = tmp_path / "example.py"
        script.write_text(code.replace(PUBLIC_INDEX, index))
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("Version: 2.31.0"), done.stdout
    assert "/simple/requests/" in requested


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_air_gapped_example(tmp_path: Path) -> None:
    ((language, code),) = blocks("Air-gapped runs")
    assert language == "bash" and "--network off" in code
    shell(code, tmp_path)
    done = results(tmp_path / "runs" / "air-gapped")
    assert done and all(r["status"] == "completed" for r in done), done
    assert all(r["metrics"]["output_match"] == 1.0 for r in done), done  # type: ignore[index]

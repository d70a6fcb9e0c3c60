"""What a run's start leaves for later or leaves out: pydantic models built on first use, not at import."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from pathlib import Path

import pydantic
import pytest

import super_bench
from super_bench._pydantic import Model

SOURCES = Path(super_bench.__file__).parent


def test_every_model_of_the_package_derives_from_the_lazy_base() -> None:
    """A model declared on pydantic's BaseModel itself would be built at import again."""
    direct = []
    for path in SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and path.name != "_pydantic.py":
                bases = [ast.unparse(b) for b in node.bases]
                if any(b in ("BaseModel", "pydantic.BaseModel") for b in bases):
                    direct.append(f"{path.relative_to(SOURCES)}: {node.name}")
    assert direct == []


def test_models_are_built_on_first_use_and_then_behave_as_ever() -> None:
    code = (
        "from super_bench.trajectory import Trajectory\n"
        "from super_bench.runner.config import RunConfig\n"
        "print(Trajectory.__pydantic_complete__, RunConfig.__pydantic_complete__)\n"
        "t = Trajectory.model_validate({'task_id': 't', 'agent': 'a', 'query': 'q'})\n"
        "print(Trajectory.__pydantic_complete__, RunConfig.__pydantic_complete__, t.task_id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split("\n")[:2] == ["False False", "True False t"]


def test_a_model_first_met_by_several_threads_at_once_is_built_and_validates_in_each() -> None:
    class Late(Model):
        name: str
        sizes: list[int]

    assert not Late.__pydantic_complete__
    found: list[object] = []
    threads = [threading.Thread(target=lambda i=i: found.append(Late(name=str(i), sizes=[i]).sizes)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(found, key=str) == [[i] for i in range(8)]
    with pytest.raises(pydantic.ValidationError, match="name"):
        Late(name=1)  # type: ignore[arg-type]

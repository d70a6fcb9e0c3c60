"""What a run's start leaves for later or leaves out: pydantic models built on first use, not at import; the
kernel without Jupyter's debugger backend (debugpy), which ipykernel would import at every start."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from pathlib import Path

import pydantic
import pytest

import super_bench
from super_bench import Action, Environment
from super_bench._pydantic import Model
from super_bench.sandbox.launch.kernel_env import kernel_env

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


def test_the_kernel_starts_without_the_debugger_backend_which_stays_installed(env: Environment) -> None:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    packages = kernel_env(sys.executable, version) / "packages"
    assert (packages / "ipykernel").is_dir() and (packages / "debugpy").is_dir()  # ipykernel requires it
    code = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('debugpy', '_pydevd_bundle')))"
    assert env.step(Action.execute(code)).observation == "[]\n"
    step = env.step(Action.execute("x = 6\n!echo $((6 * 7))\nx * 7"))
    assert step.observation.split() == ["42", "42"] and step.outcome == "ok"
    assert env.step(Action.execute("%debug?")).outcome == "ok"  # IPython's own debugger is still there
    # Nothing is missing for pip, and agent code that wants debugpy gets the installed one.
    step = env.step(Action.execute("!python -m pip check"))
    assert "debugpy" not in step.observation and step.outcome == "ok", step.observation
    step = env.step(Action.execute("import debugpy; print(debugpy.__name__)"))
    assert step.observation == "debugpy\n", step.observation


def test_the_servers_request_bodies_are_read_without_pydantic_warnings() -> None:
    """FastAPI wraps a body's model in an annotation of its own: a model built only then made pydantic warn."""
    pytest.importorskip("fastapi")
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from fastapi.testclient import TestClient\n"
        "from super_bench import EnvConfig, SandboxConfig\n"
        "from super_bench.integrations.server.app import create_app\n"
        "from super_bench.integrations.server.sessions import SessionManager\n"
        "manager = SessionManager(EnvConfig(sandbox=SandboxConfig(backend='local')))\n"
        "client = TestClient(create_app(manager, 't'))\n"
        "auth = {'Authorization': 'Bearer t'}\n"
        "print(client.post('/v1/sessions', json={'bogus': 1}, headers=auth).status_code)\n"
        "print(client.post('/v1/sessions/none/step', json={'type': 'execute'}, headers=auth).status_code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["422", "404"]

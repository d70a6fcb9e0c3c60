"""The shipped conformance suite (``super_bench.conformance``) run against every sandbox backend that works
here (the others are skipped, saying why), and the notebook behaviour it does not cover, on every backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import BACKENDS, backend_settings, tiny_wheel

from super_bench import Action, Environment
from super_bench.conformance import run_conformance
from super_bench.sandbox import SANDBOXES, SandboxConfig
from super_bench.sandbox.backends import bwrap

FIFO = "an edit of a FIFO gives up instead of hanging"


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_the_shipped_suite_passes(name: str, monkeypatch: pytest.MonkeyPatch, tmp_sandbox_root: Path) -> None:
    settings = backend_settings(name)
    monkeypatch.setattr(bwrap, "FILE_TIMEOUT", 3.0)  # the FIFO edit gives up after it, instead of 2 minutes
    report = run_conformance(SANDBOXES.get(name), SandboxConfig(root=tmp_sandbox_root, **settings))
    failures = {check.name: check.detail for check in report.failures()}
    if name == "docker" and list(failures) == [FIFO] and "TimeoutExpired" in failures[FIFO]:
        # A known fault of the docker backend today: its read_file lets the engine's subprocess.TimeoutExpired
        # escape where the contract asks for an OSError, and the edit action then fails instead of giving up.
        pytest.xfail(f"docker: {failures[FIFO]}")
    assert report.passed, "\n".join(f"{title}: {detail}" for title, detail in failures.items())
    assert len(report.checks) >= 25
    assert list(tmp_sandbox_root.iterdir()) == []  # every sandbox of the suite left nothing


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    return backend_settings(request.param)


@pytest.fixture
def start(env_factory: Any, backend: dict[str, Any]) -> Any:
    """Start an environment on a trivial task in the backend under test."""

    def started(**settings: Any) -> Environment:
        sandbox = {**backend, **settings.pop("sandbox", {})}
        env: Environment = env_factory(sandbox=sandbox, **settings)
        env.reset(make_task())
        return env

    return started


def run(env: Environment, code: str) -> Any:
    return env.step(Action.execute(code))


@pytest.mark.slow
def test_installs_land_in_the_task_layer(start: Any, tmp_path: Path) -> None:
    env = start()
    wheel = tiny_wheel(tmp_path)
    env._sandbox.write_file(wheel.name, wheel.read_bytes())
    step = run(env, f"!pip install -q --no-index --no-deps {wheel.name}")
    assert step.exit_code == 0, step.observation
    assert run(env, "import sbtinypkg; print(sbtinypkg.VALUE)").observation == "42\n"
    with pytest.raises(ImportError):
        __import__("sbtinypkg")


@pytest.mark.slow
def test_a_hundred_megabyte_output(start: Any) -> None:
    env = start(cell_timeout=120)
    step = run(env, "import sys\nfor _ in range(100):\n    sys.stdout.write('#' * 1_000_000)\nprint('\\ndone')")
    assert step.outcome == "ok"
    assert len(step.raw_output) >= 100_000_000
    assert step.observation.endswith("done\n")


# The kernel's own machinery, pinned old by the task (as old requirements files do), installed here as empty
# shells: were the kernel to import any of them, it could not start.
KERNEL_MACHINERY = {
    "typing_extensions": ("typing_extensions", "4.9.0"),
    "traitlets": ("traitlets", "5.0.5"),
    "tornado": ("tornado", "6.1"),
    "pyzmq": ("zmq", "1.0"),
    "jupyter_client": ("jupyter_client", "1.0"),
}
# ... and what cells talk to the running notebook through: user code keeps the kernel's own, live copy.
NOTEBOOK = {"ipykernel": ("ipykernel", "1.0"), "ipython": ("IPython", "1.0")}


@pytest.mark.slow
def test_the_kernel_survives_whatever_the_agent_installs(start: Any, tmp_path: Path) -> None:
    env = start()
    for name, (module, version) in {**KERNEL_MACHINERY, **NOTEBOOK}.items():
        wheel = tiny_wheel(tmp_path, name, version=version, module=module)
        env._sandbox.write_file(f"wheels/{wheel.name}", wheel.read_bytes())
    step = run(env, "!pip install -q --no-index --no-deps wheels/*.whl")
    assert step.exit_code == 0, step.observation
    assert run(env, "import os\nos._exit(1)").outcome == "kernel_died"
    modules = ", ".join(module for module, _ in KERNEL_MACHINERY.values())
    step = run(env, f"import {modules}\nprint(*(m.__version__ for m in ({modules},)))\n!echo the shell works")
    assert step.observation == f"{' '.join(v for _, v in KERNEL_MACHINERY.values())}\nthe shell works\n"
    assert env._kernel.restarts == 1
    # The notebook's own packages are the kernel's: display() reaches the notebook.
    step = run(
        env,
        "import IPython, ipykernel\nfrom IPython.display import display\ndisplay({'shown': IPython.__version__ != '1.0'})",
    )
    assert step.observation == "{'shown': True}\n"
    # Magics, tracebacks and interrupts still work on the kernel's own machinery.
    step = run(env, "%cd /tmp\n1 / 0")
    assert step.outcome == "error" and "ZeroDivisionError" in step.observation
    assert run(env, "import traitlets, json\nprint(json.dumps([traitlets.VALUE]))").observation == "[42]\n"


@pytest.mark.slow
def test_shell_commands_run_in_sh_as_the_papers_did(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``!`` runs in ``sh`` (dash on Debian), whatever the operator's own $SHELL: ``!source`` fails as
    it did 22 times in the paper's runs, where ``%%bash`` still has it; agent code that sets $SHELL
    itself gets its shell, as IPython gives it."""
    monkeypatch.setenv("SHELL", "/bin/bash")
    env = start()
    step = run(env, "!echo $$0")  # IPython reads `$0` as Python's; `$$` is the shell's `$`
    assert step.observation.strip().rsplit("/", 1)[-1] == "sh", step.observation
    step = run(env, "!source /dev/null && echo sourced")
    assert "sourced" not in step.observation and step.exit_code != 0
    if Path("/bin/sh").resolve().name == "dash":
        assert step.observation.strip().endswith("source: not found"), step.observation
    assert "sourced" in run(env, "%%bash\nsource /dev/null && echo sourced").observation
    step = run(env, "import os\nos.environ['SHELL'] = '/bin/bash'\n!echo $$0")
    assert step.observation.strip() == "/bin/bash"

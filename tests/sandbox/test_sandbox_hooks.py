"""`sandbox build` and `sandbox check` ask the backend (its `build`, `build_options`, `check_lines`), so a plug-in
gets its own through the same path as the built-ins; and no module outside `sandbox/` tells backends apart by
name."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from super_bench.sandbox import SANDBOXES, BuildReport, BuildRequest, ProcessSandbox, SandboxConfig

SRC = Path(__file__).resolve().parents[2] / "src" / "super_bench"
BUILTIN_BACKENDS = {"local", "bwrap", "docker"}


class PlainSandbox(ProcessSandbox):
    """The minimal plug-in of docs/sandboxes.md: it inherits the host base's build and check lines."""

    name = "plain"


class BuiltSandbox(ProcessSandbox):
    """A plug-in with a build and check lines of its own."""

    name = "built"
    build_options: ClassVar[frozenset[str]] = frozenset({"base_image"})

    @classmethod
    def check_lines(cls, config: SandboxConfig) -> list[str]:
        return [f"built sandbox: network {'on' if config.network else 'off'}", *super().check_lines(config)]

    @classmethod
    def build(cls, request: BuildRequest, echo: Callable[[str], None]) -> BuildReport:
        echo(f"building over {request.base_image}")
        return BuildReport(
            built=f"the built sandbox's environment over {request.base_image} from {request.requirements.name}",
            notes=(("Note:", "nothing was downloaded"),),
        )


def _with_plugins(*args: str) -> subprocess.CompletedProcess[str]:
    """``super-bench ARGS`` in a process of its own where the plug-ins above are registered, as an entry point
    would register them."""
    code = (
        "import sys\n"
        "from super_bench.sandbox import SANDBOXES\n"
        "SANDBOXES.register('plain', 'tests.sandbox.test_sandbox_hooks:PlainSandbox', summary='plain host processes')\n"
        "SANDBOXES.register('built', 'tests.sandbox.test_sandbox_hooks:BuiltSandbox', summary='a plug-in that builds')\n"
        "from super_bench.cli import entry\n"
        f"sys.argv = ['super-bench', *{list(args)!r}]\n"
        "entry()\n"
    )
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=SRC.parents[1], timeout=300
    )


def test_check_prints_each_backends_own_lines_once() -> None:
    result = _with_plugins("sandbox", "check")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "plain host processes" in out and "a plug-in that builds" in out
    assert "built sandbox: network on" in out
    # local, bwrap and both plug-ins share the host's limit lines: each is printed once.
    assert out.count("--memory-limit is enforced by:") == 1 and out.count("--disk-limit is enforced by:") == 1
    assert "bwrap privileges:" in out and "--sandbox docker uses:" in out


def test_build_runs_the_plugins_own_build(tmp_path: Path) -> None:
    requirements = tmp_path / "plain-requirements.txt"
    requirements.write_text("")
    args = ("sandbox", "build", "--backend", "built", "--base-image", "img:1", "--requirements", str(requirements))
    result = _with_plugins(*args, "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    said = " ".join(result.stdout.split())
    assert "building over img:1" in said
    assert "Built the built sandbox's environment over img:1 from plain-requirements.txt" in said
    assert "Note: nothing was downloaded" in said


@pytest.mark.parametrize(
    ("backend", "option", "refused"),
    [
        ("built", "--python=python3", "the built sandbox's build takes no --python"),
        ("plain", "--engine=docker", "the plain sandbox's build takes no --engine"),  # the host base's options
        ("docker", "--pip-arg=--no-index", "the docker sandbox's build takes no --pip-arg"),
        ("local", "--kernel-only", "the local sandbox's build takes no --kernel-only"),
    ],
)
def test_build_refuses_options_the_backend_does_not_take(backend: str, option: str, refused: str) -> None:
    result = _with_plugins("sandbox", "build", "--backend", backend, option, "--yes")
    assert result.returncode == 2 and refused in " ".join(result.stderr.split()), result.stderr


def test_a_backend_without_a_build_says_so() -> None:
    from super_bench.errors import SandboxError
    from super_bench.sandbox.base import Sandbox

    with pytest.raises(SandboxError, match="the bare sandbox has nothing to build"):
        type("Bare", (Sandbox,), {"name": "bare"}).build(BuildRequest(requirements=Path("r.txt")), print)


def _backend_name_comparisons(path: Path, root: Path = SRC) -> list[str]:
    """``x == "docker"``, ``"bwrap" != y``, ``x in ("local", ...)`` and the like: comparisons with a built-in
    backend's name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            names = {item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)}
            if names & BUILTIN_BACKENDS:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text(
        'a == "docker"\n"bwrap" != b\nc in ("x", "local")\nd == "dockerish"\ne in {"bwrap"}\nf.startswith("local")\n'
    )
    found = _backend_name_comparisons(tmp_path / "x.py", tmp_path)
    assert [line.split(":")[1] for line in found] == ["1", "2", "3", "5"]  # not "dockerish", not a method's argument


def test_no_module_outside_sandbox_compares_backend_names() -> None:
    found = [
        comparison
        for path in sorted(SRC.rglob("*.py"))
        if "sandbox" not in path.relative_to(SRC).parts[:1]
        for comparison in _backend_name_comparisons(path)
    ]
    assert found == [], "ask the backend (describe, check_lines, build, isolates) instead:\n" + "\n".join(found)


class ConfinedSandbox(PlainSandbox):
    """A plug-in that says it isolates agent code."""

    name = "confined"
    isolates: ClassVar[bool] = True


@pytest.fixture
def plugins() -> Iterator[None]:
    """The plug-ins above, registered in this process for the test."""
    SANDBOXES.register("plain", "tests.sandbox.test_sandbox_hooks:PlainSandbox")
    SANDBOXES.register("confined", "tests.sandbox.test_sandbox_hooks:ConfinedSandbox")
    yield
    SANDBOXES.unregister("plain")
    SANDBOXES.unregister("confined")


@pytest.mark.usefixtures("plugins")
@pytest.mark.parametrize(("plugin", "refused"), [("plain", True), ("confined", False)])
def test_verify_replays_in_a_backend_that_does_not_isolate_only_when_it_is_named(
    plugin: str, refused: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from super_bench.environment import EnvConfig
    from super_bench.errors import ConfigError
    from super_bench.runner import verify_env
    from super_bench.runner.rundir import RunDir

    out = tmp_path / "run"
    out.mkdir()
    asked = EnvConfig(sandbox=SandboxConfig(backend=plugin))
    (out / "run.json").write_text(json.dumps({"schema_version": 1, "config": {"env": asked.model_dump(mode="json")}}))
    env, _, _ = verify_env.replay_environment(RunDir(out), {"backend": plugin})  # named: it runs there
    assert env.sandbox.backend == plugin
    # A machine where "auto" picks the plug-in: only a backend that isolates may be picked unasked.
    monkeypatch.setattr(verify_env, "resolve_backend", lambda name: plugin if name == "auto" else name)
    if refused:
        with pytest.raises(ConfigError, match=f"would replay in the {plugin} sandbox, which does not isolate"):
            verify_env.replay_environment(RunDir(out), {"backend": "auto"})
    else:
        env, _, _ = verify_env.replay_environment(RunDir(out), {"backend": "auto"})
        assert env.sandbox.backend == "auto"

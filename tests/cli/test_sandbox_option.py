"""One name for the sandbox option on every command (`--sandbox`; `--backend`, the name `sandbox build` used,
accepted too), a suggestion when it is mistyped, and a missing docker image answered with the build that
fits: the small kernel image for the bundled demo."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from tests.e2e.test_first_hour import resolve
from tests.support.helpers import cli

from super_bench.cli import main
from super_bench.errors import SandboxError
from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.backends import docker


def commands(group: click.Group, prefix: str = "super-bench") -> list[tuple[str, click.Command]]:
    found = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix} {name}")
        else:
            found.append((f"{prefix} {name}", command))
    return found


def test_every_option_that_names_a_backend_is_sandbox_with_backend_as_its_alias() -> None:
    named = {}
    for where, command in commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and {"--sandbox", "--backend"} & set(param.opts):
                assert param.opts[:2] == ["--sandbox", "--backend"], (where, param.opts)
                named[where] = param
    assert {"super-bench run", "super-bench play", "super-bench serve", "super-bench sandbox build"} <= set(named)
    for command in ("super-bench run --backend docker", "super-bench sandbox build --sandbox docker"):
        resolve(command)


@pytest.mark.parametrize("args", [["run", "--sandbx", "local"], ["sandbox", "build", "--sandbx", "docker"]])
def test_a_mistyped_sandbox_option_suggests_it(args: list[str], tmp_path: Path) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2 and "Did you mean '--sandbox'?" in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_backend_alias_runs_as_sandbox_does(tmp_path: Path) -> None:
    result = cli("run", "--backend", "nope", "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "unknown sandbox backend 'nope'" in result.stderr, result.stderr


def test_a_missing_docker_image_is_answered_with_the_kernel_only_build_for_the_demo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = SandboxConfig(backend="docker")
    try:
        docker.find_engine(config.engine)
    except SandboxError:
        pytest.skip("no container engine here: the image is never looked for")
    monkeypatch.setattr(docker, "image_exists", lambda engine, image: False)
    monkeypatch.setattr(docker, "_FOUND", {})  # nothing found earlier in this process counts
    with pytest.raises(SandboxError) as raised:
        docker.DockerSandbox.check(config)
    message = str(raised.value)
    assert "for the bundled demo, build the small kernel image with" in message and "(about 8 GB)" in message
    (suggested,) = [part for part in message.split("`") if part.startswith("super-bench sandbox build")]
    assert suggested == "super-bench sandbox build --sandbox docker --kernel-only"
    resolve(suggested)

"""Helpers for the sandbox tests: which backends run here, marks findable on a command line, tiny wheels, a run
in a process of its own and the parent of a process."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from super_bench.errors import SandboxError
from super_bench.sandbox import SANDBOXES, SandboxConfig

# The docker backend is tested with this image (default: the one `sandbox build --sandbox docker` makes).
TEST_IMAGE = os.environ.get("SUPER_BENCH_TEST_IMAGE")
BACKENDS = ["local", "bwrap", "docker"]
# Backends that must run (CI sets this): their tests fail rather than skip where they cannot.
REQUIRED = set(os.environ.get("SUPER_BENCH_REQUIRE_SANDBOXES", "").split(","))


def backend_settings(name: str) -> dict[str, Any]:
    """Sandbox settings for ``name``; skips the test, saying why, where the backend cannot run."""
    settings: dict[str, Any] = {"backend": name}
    if name == "docker" and TEST_IMAGE:
        settings["image"] = TEST_IMAGE
    try:
        SANDBOXES.get(name).check(SandboxConfig(**settings))
    except SandboxError as e:
        if name in REQUIRED:
            pytest.fail(f"the {name} sandbox is required but cannot run here: {e}")
        pytest.skip(f"the {name} sandbox cannot run here: {e}")
    return settings


def token() -> str:
    """A number no other process has on its command line: ``sleep 1000.<digits>`` is findable by it."""
    return f"1000.{secrets.randbelow(10**9):09d}"


def tiny_wheel(
    directory: Path,
    name: str = "sbtinypkg",
    value: int = 42,
    version: str = "1.0",
    *,
    module: str | None = None,
    padding: int = 0,
    requires: tuple[str, ...] = (),
    modules: dict[str, str] | None = None,
    entry_points: str = "",
) -> Path:
    """A minimal pure-Python wheel, built by hand so that tests need no network: distribution ``name`` at
    ``version``, whose package ``module`` (default: ``name``) holds ``VALUE`` and ``__version__`` only, and
    with ``padding``, a data file of that many random bytes (stored as they are, to make a wheel that big);
    ``requires``: its dependencies (``Requires-Dist``); ``modules``: more files of the package (name -> source);
    ``entry_points``: the text of its ``entry_points.txt``."""
    module = module or name
    info = f"{name}-{version}.dist-info"
    files: dict[str, bytes] = {
        f"{module}/__init__.py": f"VALUE = {value}\n__version__ = {version!r}\n".encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if padding:
        files[f"{module}/padding.bin"] = secrets.token_bytes(padding)
    for file, source in (modules or {}).items():
        files[f"{module}/{file}"] = source.encode()
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)  # as reproducible builds do
    return wheel


def start_run(tmp_path: Path, backend: str, actions: list[dict[str, str]], *extra: str) -> subprocess.Popen[str]:
    """``super-bench run`` of the demo task tinyreg in its own process, replaying ``actions`` on ``backend``,
    into ``tmp_path/run`` with ``tmp_path/tmp`` as its temporary directory."""
    replay = tmp_path / "actions.json"
    replay.write_text(json.dumps(actions))
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    args = [
        "--agent",
        f"replay:{replay}",
        "--task-ids",
        "tinyreg",
        "--sandbox",
        backend,
        "--out",
        str(tmp_path / "run"),
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "super_bench", "run", *args, *extra],
        env={**os.environ, "TMPDIR": str(tmp), "COLUMNS": "200"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_all(pids: list[int]) -> None:
    """SIGKILL each; one that ended meanwhile (a sandbox's child goes with its parent) is no error."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def parent_pid(pid: int) -> int:
    """The parent of process ``pid``, from /proc."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def venv_with_this_pip(path: Path) -> str:
    """A virtual environment holding this pip (new enough for the upload-time filter), made offline."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True
    )
    target = Path(site.stdout.strip())
    pip = metadata.distribution("pip")
    shutil.copytree(Path(str(pip.locate_file("pip"))), target / "pip")
    info = next(p for p in Path(str(pip.locate_file(""))).glob(f"pip-{pip.version}.dist-info"))
    shutil.copytree(info, target / info.name)
    return str(python)

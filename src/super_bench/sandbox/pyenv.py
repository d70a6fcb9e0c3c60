"""The task's own Python environment, layered over a base one.

Each task gets a virtual environment whose ``site-packages`` comes first on ``sys.path``,
followed by the base environment's (``--task-python``'s, the one ``super-bench sandbox build``
made, or the harness's). The kernel, ``!pip``, ``%pip`` and ``!python`` all resolve to the task
environment, so whatever the agent installs, upgrades or breaks stays in the task directory: the
harness and the shared base are never written to (pip refuses to uninstall anything outside the
environment).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from super_bench.errors import SandboxError

_PROBE = """
import importlib.util, json, os, site, sys
print(json.dumps({
    "executable": sys.executable,
    "version": f"{sys.version_info[0]}.{sys.version_info[1]}",
    "site_dirs": [p for p in site.getsitepackages() if p],
    "paths": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    + [p for p in sys.path[1:] if os.path.isdir(p)],
    "has_pip": importlib.util.find_spec("pip") is not None,
    "has_ipykernel": importlib.util.find_spec("ipykernel") is not None,
}))
"""

_PIP_SHIM = """#!{python}
import sys
from pip._internal.cli.main import main
sys.exit(main())
"""


@dataclass(frozen=True)
class BasePython:
    """An interpreter and the site directories a task environment inherits from it."""

    executable: str
    version: str
    site_dirs: tuple[str, ...]
    has_pip: bool
    # Directories the interpreter reads (prefixes, the standard library, site directories and
    # what their .pth files add): an isolating sandbox must keep them visible, read-only.
    paths: tuple[str, ...] = ()

    @classmethod
    def current(cls) -> BasePython:
        """The harness's own interpreter and packages (ipykernel is a dependency of super-bench)."""
        site_dirs = tuple(p for p in site.getsitepackages() if p)
        return cls(
            executable=sys.executable,
            version=f"{sys.version_info[0]}.{sys.version_info[1]}",
            site_dirs=site_dirs,
            has_pip=importlib.util.find_spec("pip") is not None,
            paths=_real_dirs([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site_dirs]),
        )

    @classmethod
    def from_interpreter(cls, python: Path, *, require_kernel: bool = True) -> BasePython:
        """Another interpreter (``--task-python``, or a base built by ``sandbox build``)."""
        try:
            proc = subprocess.run(
                [str(python), "-c", _PROBE],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
                # What the interpreter reads by itself, not what this process was told to add.
                env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
            )
            info = json.loads(proc.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
            raise SandboxError(f"cannot use {python} as the task Python: {e}") from e
        if require_kernel and not info["has_ipykernel"]:
            raise SandboxError(
                f"the task Python {python} has no ipykernel; install it with: {python} -m pip install ipykernel"
            )
        return cls(
            info["executable"],
            info["version"],
            tuple(info["site_dirs"]),
            info["has_pip"],
            _real_dirs(info["paths"]),
        )


def _real_dirs(paths: list[str]) -> tuple[str, ...]:
    """The distinct real paths of existing directories, outermost first, nested ones dropped."""
    found: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)}):
        if not any(path == f or path.startswith(f.rstrip("/") + "/") for f in found):
            found.append(path)
    return tuple(found)


def create_task_env(target: Path, base: BasePython, visible_at: str | None = None) -> Path:
    """Create the layered environment at ``target``; returns its ``bin`` directory.

    ``visible_at``: where agent code will see the environment, if not at ``target`` (a sandbox
    that mounts it elsewhere); the ``pip`` commands are written for that path.
    """
    try:
        if base.executable == sys.executable:
            venv.EnvBuilder(with_pip=not base.has_pip, symlinks=True).create(target)
        else:
            args = [base.executable, "-m", "venv", "--symlinks", str(target)]
            subprocess.run(
                args if not base.has_pip else [*args, "--without-pip"],
                check=True,
                timeout=300,
                capture_output=True,
            )
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxError(f"cannot create the task's Python environment in {target}: {e}") from e
    bin_dir = target / "bin"
    site_packages = target / "lib" / f"python{base.version}" / "site-packages"
    # A .pth line that starts with "import" is executed; addsitedir (unlike a bare path line)
    # also processes the base's own .pth files, which editable installs and namespace packages need.
    lines = [f"import site; site.addsitedir({d!r})" for d in base.site_dirs]
    (site_packages / "_super_bench_base.pth").write_text("\n".join(lines) + "\n")
    # pip's own scripts (when the venv got a pip of its own) name ``target``; these work wherever it is seen.
    for name in ("pip", "pip3", f"pip{base.version}"):
        shim = bin_dir / name
        shim.write_text(_PIP_SHIM.format(python=f"{visible_at or target}/bin/python"))
        shim.chmod(0o755)
    return bin_dir


# -- the shared base environment (``super-bench sandbox build``) --------------------------------
COLAB_REQUIREMENTS = Path(__file__).resolve().parent / "data" / "task-requirements.txt"
_BUILT_MARKER = "super-bench-base.json"


def base_env_dir() -> Path:
    """Where the base environment goes: ``$SUPER_BENCH_BASE_ENV``, else the user's cache directory."""
    if os.environ.get("SUPER_BENCH_BASE_ENV"):
        return Path(os.environ["SUPER_BENCH_BASE_ENV"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "super-bench" / "base-env"


def built_base_python() -> Path | None:
    """The interpreter of the base environment ``sandbox build`` made, if it finished."""
    target = base_env_dir()
    return target / "bin" / "python" if (target / _BUILT_MARKER).is_file() else None


def build_base_env(
    python: Path | None = None,
    requirements: Path = COLAB_REQUIREMENTS,
    pip_args: tuple[str, ...] = (),
    target: Path | None = None,
) -> Path:
    """Build the base environment task environments are layered over; returns its interpreter.

    The base is itself layered over ``python`` (default: the harness's own), so ipykernel is
    there even when the requirements do not list it; what the requirements install comes first.
    Output of pip goes to this process's stdout and stderr.
    """
    target = target or base_env_dir()
    base = BasePython.current() if python is None else BasePython.from_interpreter(python, require_kernel=False)
    # Paths inside a virtual environment are absolute, so it is built in place; the marker,
    # written last, says the build finished.
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    interpreter = create_task_env(target, base) / "python"
    command = [str(interpreter), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
    if subprocess.run([*command, *pip_args]).returncode != 0:
        raise SandboxError(f"installing {requirements} into {target} failed (pip's output is above)")
    check = subprocess.run([str(interpreter), "-c", "import ipykernel"], capture_output=True, text=True)
    if check.returncode != 0:
        raise SandboxError(f"the base environment in {target} cannot import ipykernel; add it to {requirements}")
    (target / _BUILT_MARKER).write_text(
        json.dumps({"python": base.executable, "version": base.version, "requirements": str(requirements)}) + "\n"
    )
    return interpreter

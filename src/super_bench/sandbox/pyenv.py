"""The task's own Python environment, layered over a base one.

Each task gets a virtual environment whose ``site-packages`` comes first on ``sys.path``,
followed by the base environment's (the harness's, or ``--task-python``'s). The kernel,
``!pip``, ``%pip`` and ``!python`` all resolve to the task environment, so whatever the
agent installs, upgrades or breaks stays in the task directory: the harness and the shared
base are never written to (pip refuses to uninstall anything outside the environment).
"""

from __future__ import annotations

import importlib.util
import json
import site
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from super_bench.errors import SandboxError

_PROBE = """
import importlib.util, json, site, sys
print(json.dumps({
    "executable": sys.executable,
    "version": f"{sys.version_info[0]}.{sys.version_info[1]}",
    "site_dirs": [p for p in site.getsitepackages() if p],
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

    @classmethod
    def current(cls) -> BasePython:
        """The harness's own interpreter and packages (ipykernel is a dependency of super-bench)."""
        return cls(
            executable=sys.executable,
            version=f"{sys.version_info[0]}.{sys.version_info[1]}",
            site_dirs=tuple(p for p in site.getsitepackages() if p),
            has_pip=importlib.util.find_spec("pip") is not None,
        )

    @classmethod
    def from_interpreter(cls, python: Path) -> BasePython:
        """Another interpreter (``--task-python``); it must have ipykernel installed."""
        try:
            proc = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True)
            info = json.loads(proc.stdout)
        except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
            raise SandboxError(f"cannot use {python} as the task Python: {e}") from e
        if not info["has_ipykernel"]:
            raise SandboxError(
                f"the task Python {python} has no ipykernel; install it with: {python} -m pip install ipykernel"
            )
        return cls(info["executable"], info["version"], tuple(info["site_dirs"]), info["has_pip"])


def create_task_env(target: Path, base: BasePython) -> Path:
    """Create the layered environment at ``target``; returns its ``bin`` directory."""
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
    if base.has_pip:
        for name in ("pip", "pip3", f"pip{base.version}"):
            shim = bin_dir / name
            shim.write_text(_PIP_SHIM.format(python=bin_dir / "python"))
            shim.chmod(0o755)
    return bin_dir

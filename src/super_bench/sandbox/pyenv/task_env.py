"""The task's own Python environment: a virtual environment layered over a base that holds no harness.

Each task gets a virtual environment of its own whose ``site-packages`` comes first on
``sys.path``, followed by the base's package directories. The base is one of:

- ``default``: the harness's interpreter with only its standard library, plus the paper's pip (24.0) and a
  copy of setuptools and numpy (made once from the harness's own, so it works offline);
- ``built``: SUPER's environment, which ``super-bench sandbox build`` makes (see ``super_base``);
- ``custom``: an interpreter given with ``--task-python``, with its packages.

The harness's own packages (super-bench, pydantic, openai, ...) are never among them, and the
kernel's machinery comes from a separate kernel environment (``kernel.kernel_env``). The kernel, ``!pip``,
``%pip`` and ``!python`` all resolve to the task environment, so whatever the agent installs,
upgrades or breaks stays in the task directory (pip refuses to uninstall anything outside it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import site
import subprocess
import sys
import sysconfig
import threading
import venv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from super_bench.errors import SandboxError
from super_bench.sandbox.launch.kernel_env import copy_distributions, distribution_closure, kernel_env
from super_bench.sandbox.lifetime.build_cache import build_once, cache_dir, remembered
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP, paper_pip_wheel, unpack_wheel

BaseKind = Literal["default", "built", "custom"]

_PROBE = """
import json, os, site, sys, sysconfig
base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
print(json.dumps({
    "interpreter": os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
    "version": "%d.%d" % sys.version_info[:2],
    "full_version": "%d.%d.%d" % sys.version_info[:3],
    "site_dirs": [p for p in site.getsitepackages() if p],
    "global_site_dirs": [p for p in site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]) if p]
    + [site.getusersitepackages()],
    "system": [sys.base_prefix, sys.base_exec_prefix]
    + [sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib")],
    "paths": [sys.prefix, sys.exec_prefix] + [p for p in sys.path[1:] if os.path.isdir(p)],
}))
"""

_PIP_SHIM = """#!{python}
import sys
from pip._internal.cli.main import main
sys.exit(main())
"""

# What the default base gives a task besides the standard library: pip to install the rest, and
# numpy, which nearly every research repository (and the bundled demo tasks) needs.
DEFAULT_PACKAGES = ("pip", "setuptools", "wheel", "numpy")


@dataclass(frozen=True)
class BasePython:
    """An interpreter and the package directories a task environment is layered over."""

    interpreter: str  # the real interpreter task environments are made from
    version: str  # "3.11"
    full_version: str  # "3.11.7"
    site_dirs: tuple[str, ...]  # package directories under the task's own, in order
    kind: BaseKind
    # Directories the interpreter reads (prefixes, the standard library): an isolating sandbox shows
    # them read-only, minus ``hidden``, the interpreter's own site directories the base does not use.
    paths: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    @property
    def kernel_dir(self) -> Path:
        """The kernel's own packages for this interpreter (built on first use)."""
        return kernel_env(self.interpreter, self.version)


def _probe(python: str) -> dict[str, object]:
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            # What the interpreter reads by itself, not what this process was told to add.
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
        )
        info: dict[str, object] = json.loads(proc.stdout)
    except subprocess.CalledProcessError as e:
        detail = (e.stderr or e.stdout or "").strip().splitlines()
        why = detail[-1] if detail else f"it exited with status {e.returncode}"
        raise SandboxError(f"cannot use {python} as the task Python: {why}") from e
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        raise SandboxError(f"cannot use {python} as the task Python: {e}") from e
    return info


def _strings(info: dict[str, object], key: str) -> list[str]:
    value = info[key]
    assert isinstance(value, list)
    return [str(v) for v in value]


def from_interpreter(python: Path | str, kind: BaseKind = "custom") -> BasePython:
    """A base made of an interpreter's own packages (``--task-python``, or the environment ``sandbox build`` made)."""
    info = _probe(str(python))
    site_dirs = tuple(_strings(info, "site_dirs"))
    global_dirs = [p for p in _strings(info, "global_site_dirs") if p not in site_dirs]
    # The built base is known: its interpreter, and its package directory (shown elsewhere, see site_dirs).
    # An interpreter of the user's own may rely on anything on its path (an editable install's sources).
    extra = [] if kind == "built" else [p for p in _strings(info, "paths") if p not in site_dirs]
    return BasePython(
        interpreter=str(info["interpreter"]),
        version=str(info["version"]),
        full_version=str(info["full_version"]),
        site_dirs=site_dirs,
        kind=kind,
        paths=_real_dirs(_strings(info, "system") + extra),
        hidden=_real_dirs(global_dirs),
    )


@functools.cache
def default_base() -> BasePython:
    """The harness's interpreter, its standard library only, plus a copy of ``DEFAULT_PACKAGES``.

    Its facts are this process's own (no probe): the same interpreter, whatever environment runs it."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    # The standard library as the interpreter itself lays it out (not as a virtual environment running it would).
    base_vars = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    stdlib = [sysconfig.get_path(name, vars=base_vars) for name in ("stdlib", "platstdlib")]
    system = [sys.base_prefix, sys.base_exec_prefix, *stdlib]
    global_sites = [*site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]), site.getusersitepackages()]
    return BasePython(
        interpreter=os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        version=version,
        full_version=".".join(map(str, sys.version_info[:3])),
        site_dirs=(str(_default_packages(version)),),
        kind="default",
        paths=_real_dirs(system),
        # The interpreter's own site-packages, and the harness's (a virtual environment's).
        hidden=_real_dirs([*global_sites, *site.getsitepackages()]),
    )


def _default_packages(version: str) -> Path:
    """A directory with the paper's pip (24.0, where it can be had; else the harness's own) and copies of the
    harness's own setuptools, wheel and numpy (made once)."""
    wheel = paper_pip_wheel()
    found = remembered("task-packages", [version, list(DEFAULT_PACKAGES), wheel is not None])
    if found.built is not None:
        return found.built
    wanted = [name for name in DEFAULT_PACKAGES if not (name == "pip" and wheel is not None)]
    dists = []
    for name in wanted:
        try:
            dists += distribution_closure([name])
        except SandboxError:
            continue  # setuptools and wheel are welcome, not needed
    unique = list({d.name: d for d in dists}.values())
    names = sorted(d.pin for d in unique)
    if wheel is not None:
        names.append(f"pip=={PAPER_PIP}")

    def fill(directory: Path) -> None:
        copy_distributions(unique, directory)
        if wheel is not None:
            unpack_wheel(wheel, directory)

    built = build_once("task-packages", [version, names], fill)
    found.remember(built)
    return built


def _real_dirs(paths: list[str]) -> tuple[str, ...]:
    """The distinct real paths of existing directories, outermost first, nested ones dropped."""
    found: list[str] = []
    for path in sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)}):
        if not any(path == f or path.startswith(f.rstrip("/") + "/") for f in found):
            found.append(path)
    return tuple(found)


def create_task_env(
    target: Path, base: BasePython, visible_at: str | None = None, site_dirs: list[str] | None = None
) -> Path:
    """Create the layered environment at ``target``; returns its ``bin`` directory.

    ``visible_at``: where agent code will see the environment, if not at ``target`` (a sandbox
    that mounts it elsewhere); the ``pip`` commands are written for that path. ``site_dirs``: the
    base's package directories as agent code sees them (default: where they are).
    """
    try:
        if os.path.realpath(getattr(sys, "_base_executable", sys.executable)) == base.interpreter:
            venv.EnvBuilder(symlinks=True).create(target)  # in this process: some 50 ms less per task
        else:
            command = [base.interpreter, "-m", "venv", "--without-pip", "--symlinks", str(target)]
            subprocess.run(command, check=True, timeout=300, capture_output=True)
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxError(f"cannot create the task's Python environment in {target}: {e}") from e
    bin_dir = target / "bin"
    site_packages = target / "lib" / f"python{base.version}" / "site-packages"
    # A .pth line that starts with "import" is executed; addsitedir (unlike a bare path line)
    # also processes the base's own .pth files, which editable installs and namespace packages need.
    # Each is added even where already on sys.path (an empty set of known paths), so that it lands at the end:
    # pip's isolated build environment reprocesses this environment's site-packages and drops what that
    # appends to sys.path, so the base (torch, numpy) stays out of isolated builds, as a plain virtual
    # environment's system site does. (Names of the line's own: site runs it with its function's locals.)
    shown = list(base.site_dirs if site_dirs is None else site_dirs)
    line = f"import site; (lambda add: [add(p, set()) for p in {shown!r}])(site.addsitedir)"
    (site_packages / "_super_bench_base.pth").write_text(line + "\n")
    # pip lives in the base; these commands run it with the task's interpreter, wherever that is seen.
    for name in ("pip", "pip3", f"pip{base.version}"):
        shim = bin_dir / name
        shim.write_text(_PIP_SHIM.format(python=f"{visible_at or target}/bin/python"))
        shim.chmod(0o755)
    return bin_dir


def packages_of(directories: Sequence[str]) -> dict[str, str]:
    """The distributions in package directories, by name, like ``pip freeze``.

    Parsing each distribution's metadata is what this costs (tens of milliseconds for the kernel's packages,
    at every run's record of its environment, far more for SUPER's): the list is noted in the cache directory,
    keyed by the directories' metadata folders (whose names hold each distribution's name and version) and
    their modification times, and read from the note until they change."""
    key: list[object] = []
    for directory in directories:  # in their order: a distribution in two of them is listed at the later one's
        try:
            with os.scandir(directory) as entries:
                found = [e for e in entries if e.name.endswith((".dist-info", ".egg-info"))]
                key.append([directory, sorted((e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in found)])
        except OSError:
            key.append([directory, None])
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    note = cache_dir() / "package-lists" / f"{digest}.json"
    try:
        noted = json.loads(note.read_text())
        if isinstance(noted, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in noted.items()):
            return noted
    except (OSError, ValueError):
        pass
    from importlib import metadata

    parsed = {d.metadata["Name"]: d.version for d in metadata.distributions(path=list(directories))}
    listed = dict(sorted(((k, v) for k, v in parsed.items() if k), key=lambda kv: kv[0].lower()))
    with contextlib.suppress(OSError):  # listed the long way next time too
        note.parent.mkdir(parents=True, exist_ok=True)
        partial = note.with_name(f".{note.name}-{os.getpid()}-{threading.get_ident()}")
        partial.write_text(json.dumps(listed))
        os.replace(partial, note)
    return listed

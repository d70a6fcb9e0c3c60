"""Which base a task environment is layered over, and SUPER's own environment, which ``sandbox build`` makes."""

from __future__ import annotations

import functools
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.errors import SandboxError
from super_bench.sandbox.isolated_pip import isolated_pip_environ
from super_bench.sandbox.launch.kernel_env import kernel_env
from super_bench.sandbox.lifetime.build_cache import cache_dir
from super_bench.sandbox.mirrors.serving import PIP_WITH_UPLOAD_FILTER, cutoff_of
from super_bench.sandbox.pyenv.base_install import (
    TORCH_CPU_INDEX,
    TorchSource,
    install_list,
    pip_install,
    torch_notes,
    without_pytorch_indexes,
)
from super_bench.sandbox.pyenv.paper_pip import install_papers_pip
from super_bench.sandbox.pyenv.task_env import BasePython, default_base, from_interpreter

COLAB_REQUIREMENTS = Path(__file__).resolve().parents[1] / "in_task" / "task-requirements.txt"
# What building SUPER's environment from COLAB_REQUIREMENTS costs (torch and its CUDA libraries are most of it).
BUILD_COST = "about 6 GB of packages to download, about 3 minutes on a fast connection"
BUILT_MARKER = "super-bench-base.json"


def base_env_dir() -> Path:
    """Where ``sandbox build`` puts SUPER's environment: ``$SUPER_BENCH_BASE_ENV``, else in the cache directory."""
    if os.environ.get("SUPER_BENCH_BASE_ENV"):
        return Path(os.environ["SUPER_BENCH_BASE_ENV"])
    return cache_dir() / "base-env"


def built_record() -> BaseEnvRecord | None:
    """What ``sandbox build`` recorded of the environment it made, if it finished."""
    try:
        return BaseEnvRecord.model_validate_json((base_env_dir() / BUILT_MARKER).read_text())
    except (OSError, ValueError):
        return None


def task_base(task_python: Path | None = None) -> BasePython:
    """``--task-python``, else the environment ``sandbox build`` made, else the default base."""
    if task_python is not None:
        return _interpreter_base(str(task_python), "custom")
    if built_record() is not None:
        return _interpreter_base(str(base_env_dir() / "bin" / "python"), "built")
    return default_base()


@functools.cache
def _interpreter_base(python: str, kind: str) -> BasePython:
    return from_interpreter(python, "built" if kind == "built" else "custom")


# -- building it (``super-bench sandbox build``) ------------------------------------------------------
PAPER_PYTHON = "3.10"
_NEAREST = ("3.10", "3.11", "3.9", "3.12", "3.8", "3.13")


def find_python(requested: str | None) -> str:
    """The interpreter to build from: ``requested`` (a path or a command on PATH), else SUPER's Python 3.10
    where there is one (on PATH or installed by pyenv), else the closest version found, else this one."""
    if requested is not None:
        found = shutil.which(requested) if os.sep not in requested else requested
        if found is None:
            raise SandboxError(f"--python {requested}: no such interpreter (give a path or a command on PATH)")
        real, problem = _interpreter(found)
        if real is None:
            raise SandboxError(f"--python {requested} does not work: {problem}")
        return real
    for version in _NEAREST:
        for candidate in [shutil.which(f"python{version}"), *_pyenv_pythons(version)]:
            if candidate and (real := _interpreter(candidate)[0]):
                return real
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def _interpreter(python: str) -> tuple[str | None, str]:
    """The real interpreter behind ``python`` (a shim, a link), or None and why it does not run."""
    code = "import os, sys, venv; print(os.path.realpath(getattr(sys, '_base_executable', sys.executable)))"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return None, lines[0] if lines else f"exit status {proc.returncode}"
    return proc.stdout.strip(), ""


def _pyenv_pythons(version: str) -> list[str]:
    """Interpreters of ``version`` that pyenv installed but does not put on PATH (its shims only run the active one)."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    return sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")), reverse=True)


class BaseEnvRecord(Model):
    """What ``sandbox build`` made, written beside the environment when it finished."""

    model_config = ConfigDict(extra="ignore")

    python: str = Field(description="The interpreter the environment was made from")
    version: str = Field(description="Its version, e.g. 3.10.13")
    paper_python: str = PAPER_PYTHON
    requirements: str
    installed: dict[str, str] = Field(default_factory=dict, description="Every distribution in it, by name")
    packages_as_of: str | None = Field(None, description="The date its packages were installed as of (UTC)")
    torch: str = Field("pypi", description="Where torch came from: pypi (the list's indexes) or cpu (PyTorch's)")
    skipped: dict[str, str] = Field(default_factory=dict, description="Entries that could not be had, with why")
    notes: list[str] = Field(default_factory=list)
    built_at: datetime


def build_base_env(
    python: str | None = None,
    requirements: Path = COLAB_REQUIREMENTS,
    pip_args: tuple[str, ...] = (),
    target: Path | None = None,
    echo: Callable[[str], None] = print,
    *,
    packages_as_of: date | datetime | None = None,
    torch: TorchSource = "pypi",
) -> BaseEnvRecord:
    """Build the base environment task environments are layered over (pip's output goes to this process's
    own): with the packages as uploaded by ``packages_as_of``, torch from ``torch``'s source (``base_install``)."""
    interpreter = find_python(python)
    target = target or base_env_dir()
    notes: list[str] = []
    version = _full_version(interpreter)
    if not version.startswith(PAPER_PYTHON + "."):
        why = "as asked" if python is not None else f"no Python {PAPER_PYTHON} was found here"
        notes.append(f"Python {version} ({why}), not {PAPER_PYTHON} as in the paper's environment")
    echo(f"Building SUPER's task environment in {target} from {interpreter} (Python {version}) ...")
    # Paths inside a virtual environment are absolute, so it is built in place; the record, written
    # last, says the build finished.
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    created = subprocess.run([interpreter, "-m", "venv", "--symlinks", str(target)], env=isolated_pip_environ())
    if created.returncode != 0:
        raise SandboxError(f"cannot create a virtual environment in {target} with {interpreter}")
    env_python = str(target / "bin" / "python")
    plan = plan_list(requirements, torch, packages_as_of, echo)
    options, entries, torch, cutoff = plan.options, plan.entries, plan.torch, plan.cutoff
    notes += plan.notes
    # A pip with the upload-time filter, for the date here and --packages-as-of later (the interpreter's own
    # may be older); pip itself is the installer, not one of the list's packages: today's.
    if pip_install(env_python, ["--upgrade", f"pip>={PIP_WITH_UPLOAD_FILTER[0]}", *pip_args]) != 0:
        if packages_as_of is not None:
            raise SandboxError(
                f"--packages-as-of needs pip {PIP_WITH_UPLOAD_FILTER[0]} or newer in the base environment, and pip "
                f"could not be upgraded (its output is above)"
            )
        notes.append(f"pip could not be upgraded to {PIP_WITH_UPLOAD_FILTER[0]} or newer: --packages-as-of needs it")
    skipped = install_list(env_python, options, entries, pip_args, torch=torch, cutoff=cutoff, echo=echo)
    if skipped is None:
        raise SandboxError(f"installing {requirements} into {target} failed (pip's output is above)")
    # Tasks get the paper's pip, as over the default base; --packages-as-of holds for them through the package
    # cache, which applies the date itself.
    pip_note = install_papers_pip(env_python)
    if pip_note is not None:
        notes.append(pip_note)
        echo(pip_note)
    kernel_env(env_python, ".".join(version.split(".")[:2]))
    record = BaseEnvRecord(
        python=interpreter,
        version=version,
        requirements=str(requirements),
        packages_as_of=packages_as_of.isoformat() if packages_as_of is not None else None,
        torch=torch,
        installed=_installed(env_python),
        skipped=skipped,
        notes=notes,
        built_at=datetime.now(timezone.utc),
    )
    (target / BUILT_MARKER).write_text(record.model_dump_json(indent=2) + "\n")
    return record


@dataclass(frozen=True)
class ListPlan:
    """How a build installs the package list, decided once before it starts (the same for every backend's
    build, so that they install one package set): the pip options whose indexes answer, the entries, where
    torch comes from and the date the packages are installed as of; with the notes the record keeps."""

    options: list[str]
    entries: list[str]
    torch: TorchSource
    cutoff: datetime | None
    notes: list[str]


def plan_list(
    requirements: Path,
    torch: TorchSource,
    packages_as_of: date | datetime | None,
    echo: Callable[[str], None],
    torch_index: str = TORCH_CPU_INDEX,
) -> ListPlan:
    """Read the list and ask each index it names once: one that does not answer is left out (pip would retry
    it for every package's page, minutes each), and torch from PyPI where the CPU index does not answer."""
    notes: list[str] = []
    options, entries = _read_requirements(requirements)
    options = _reachable_indexes(without_pytorch_indexes(options), notes, echo)
    if torch == "cpu" and not index_answers(torch_index):
        note = f"the PyTorch CPU index {torch_index} is unreachable: torch comes from PyPI (with CUDA libraries)"
        notes.append(note)
        echo(note)
        torch = "pypi"
    cutoff = cutoff_of(packages_as_of) if packages_as_of is not None else None
    notes += torch_notes(entries, torch, cutoff)
    return ListPlan(options, entries, torch, cutoff, notes)


def _full_version(python: str) -> str:
    proc = subprocess.run(
        [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], capture_output=True, text=True
    )
    return proc.stdout.strip()


def _read_requirements(path: Path) -> tuple[list[str], list[str]]:
    """(pip options, requirement entries) of a requirements file; comments and blank lines dropped."""
    options, entries = [], []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("-"):
            options += shlex.split(line)
        else:
            entries.append(line)
    return options, entries


def _reachable_indexes(options: list[str], notes: list[str], echo: Callable[[str], None]) -> list[str]:
    """``options`` without the index URLs that do not answer (pip would retry each for minutes)."""
    kept: list[str] = []
    pending: str | None = None
    for option in options:
        if pending is not None:
            flag, pending = pending, None
            if index_answers(option):
                kept += [flag, option]
            else:
                note = f"the package index {option} is unreachable: its packages come from PyPI instead"
                notes.append(note)
                echo(note)
            continue
        flag, eq, value = option.partition("=")
        if flag in ("--extra-index-url", "--index-url", "-i", "--find-links", "-f"):
            if eq:
                kept += _reachable_indexes([flag, value], notes, echo)
            else:
                pending = flag
            continue
        kept.append(option)
    return kept


def index_answers(url: str) -> bool:
    """Whether a package index answers at all (one request, 15 s at most): pip would retry one that does not
    for every page, minutes each; a build asks once and decides."""
    if not url.startswith(("http://", "https://")):
        return True
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except (OSError, ValueError):
        return False


def _installed(python: str) -> dict[str, str]:
    code = "import importlib.metadata as m, json; print(json.dumps({d.name: d.version for d in m.distributions()}))"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    try:
        found: dict[str, str] = json.loads(proc.stdout)
    except ValueError:
        return {}
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))

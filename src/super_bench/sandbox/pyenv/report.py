"""Which task environment a run uses, and how it differs from the one the paper's runs had."""

from __future__ import annotations

import re

from pydantic import Field, computed_field

from super_bench._pydantic import Model
from super_bench.sandbox.config import SandboxConfig
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP
from super_bench.sandbox.pyenv.super_base import (
    BUILD_COST,
    COLAB_REQUIREMENTS,
    PAPER_PYTHON,
    built_record,
    task_base,
)
from super_bench.sandbox.pyenv.task_env import packages_of

# The torch the paper's runs had: their outputs print 2.2.1+cpu (pip's lines, torch.__version__).
PAPER_TORCH = "2.2.1+cpu"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*([^\s;#]+))?")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def reference_packages() -> dict[str, str | None]:
    """The paper's environment's package list: canonical name -> version (None where not pinned)."""
    found: dict[str, str | None] = {}
    for line in COLAB_REQUIREMENTS.read_text().splitlines():
        if line.lstrip().startswith(("#", "-")) or not line.strip():
            continue
        match = _NAME.match(line)
        if match:
            found[_canonical(match.group(1))] = match.group(2)
    return found


def paper_differences(python: str, pip: str | None) -> list[str]:
    """How an interpreter and its pip differ from the paper's environment's (Python 3.10, pip 24.0)."""
    found = []
    if python != PAPER_PYTHON and not python.startswith(PAPER_PYTHON + "."):
        found.append(f"Python {python}, not {PAPER_PYTHON} as in the paper's")
    if pip is None:
        found.append(f"no pip, where the paper's had {PAPER_PIP}")
    elif pip != PAPER_PIP:
        found.append(f"pip {pip}, not {PAPER_PIP} as in the paper's")
    return found


class TaskEnvironmentInfo(Model):
    """Recorded in every run's manifest and summary."""

    kind: str = Field(description="default (no SUPER environment built), built (sandbox build) or custom")
    python: str = Field(description="Version of the task's interpreter")
    interpreter: str
    paper_python: str = PAPER_PYTHON
    pip: str | None = Field(default=None, description="The pip version task environments have")
    paper_pip: str = PAPER_PIP
    missing: list[str] = Field(default_factory=list, description="Packages of the paper's environment not in it")
    other_versions: dict[str, str] = Field(
        default_factory=dict, description="Packages in it at another version than the paper's environment had"
    )
    packages_as_of: str | None = Field(
        None, description="The date `sandbox build --packages-as-of` installed the base's packages as of"
    )
    torch: str | None = Field(None, description="Where the built base's torch came from: pypi or cpu (`--torch`)")
    notes: list[str] = Field(default_factory=list)
    source: str | None = Field(None, description="What holds it, where not a base of this host (a docker image)")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def differences(self) -> list[str]:
        """Each way it differs from the paper's environment, one line each (``sandbox check`` shows them)."""
        found = paper_differences(self.python, self.pip)
        if self.missing:
            found.append(f"{len(self.missing)} of its packages missing: {', '.join(self.missing)}")
        pinned = reference_packages()
        found += [f"{name} {version}, not {pinned[name]}" for name, version in self.other_versions.items()]
        if self.kind == "built" and self.torch != "cpu" and "torch" not in self.missing:
            found.append(f"torch from PyPI (with CUDA libraries), not the CPU build {PAPER_TORCH} the paper's runs had")
        return found

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str:
        """One line for people."""
        total = len(reference_packages())
        if self.kind == "default":
            head = (
                f"the minimal default (Python {self.python}, pip and numpy), not SUPER's: {len(self.missing)} of "
                f"its {total} packages are missing. The bundled demo tasks do not need them; for SUPER's tasks, "
                f"build it once with `super-bench sandbox build` ({BUILD_COST.split(',')[0]})"
            )
        else:
            label = "SUPER's, built by `super-bench sandbox build`" if self.kind == "built" else "--task-python's"
            label = f"SUPER's, in {self.source}" if self.source else label
            dated = f", packages as of {self.packages_as_of}" if self.packages_as_of else ""
            cpu = ", CPU-only torch" if self.torch == "cpu" else ""
            head = f"{label} (Python {self.python}{dated}{cpu})"
            differences = []
            if not self.python.startswith(PAPER_PYTHON + "."):
                differences.append(f"Python {self.python}, not {PAPER_PYTHON}")
            if self.missing:
                differences.append(
                    f"{len(self.missing)} of {total} packages missing ({', '.join(self.missing[:5])}"
                    + (", ..." if len(self.missing) > 5 else "")
                    + ")"
                )
            if self.other_versions:
                differences.append(f"{len(self.other_versions)} at other versions")
            head += "; differs from the paper's: " + "; ".join(differences) if differences else ", as in the paper"
        return head


def describe_task_environment(config: SandboxConfig) -> TaskEnvironmentInfo:
    """What the task environments of ``config`` are layered over, next to the paper's environment."""
    base = task_base(config.task_python)
    record = built_record() if base.kind == "built" else None
    return compare_with_paper(
        base.kind,
        base.full_version,
        base.interpreter,
        packages_of(base.site_dirs),
        packages_as_of=record.packages_as_of if record else None,
        torch=record.torch if record else None,
        notes=list(record.notes) if record else [],
    )


def compare_with_paper(
    kind: str,
    python: str,
    interpreter: str,
    packages: dict[str, str],
    *,
    packages_as_of: str | None = None,
    torch: str | None = None,
    notes: list[str] | None = None,
    source: str | None = None,
) -> TaskEnvironmentInfo:
    """An environment's record next to the paper's, from what is installed in it (every backend's the same
    way, so that their records compare)."""
    installed = {_canonical(name): version for name, version in packages.items()}
    reference = reference_packages()
    missing = sorted(name for name in reference if name not in installed)
    other = {
        name: installed[name]
        for name, version in reference.items()
        if version and name in installed and installed[name].split("+")[0] != version
    }
    notes = list(notes or [])
    pip = installed.get("pip")
    if pip is not None and pip != PAPER_PIP:
        notes.append(f"pip {pip}, not {PAPER_PIP} as in the paper's environment")
    return TaskEnvironmentInfo(
        kind=kind,
        python=python,
        interpreter=interpreter,
        missing=missing,
        other_versions=other,
        pip=pip,
        packages_as_of=packages_as_of,
        torch=torch,
        notes=notes,
        source=source,
    )

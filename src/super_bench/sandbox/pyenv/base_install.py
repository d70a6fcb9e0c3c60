"""How ``sandbox build`` installs SUPER's package list into the base environment: which pip commands, in order.

- ``--packages-as-of DATE``: every package from the list's indexes as uploaded by the end of DATE (pip's
  own upload-time filter: the base gets a pip that has it before anything else is installed).
- ``--torch cpu`` (the default: the paper's runs had torch 2.2.1+cpu): torch (and torchvision, torchaudio,
  ... where listed) from the PyTorch CPU index, and
  from it alone; every other package, torch's own dependencies included, from the list's other indexes as
  without the option. Its pages give no upload times, which pip's filter needs, so the date does not
  apply to the torch packages: they are installed at the version the list pins, and the record says so.
  ``--torch pypi`` takes torch from the list's indexes like every other package: PyPI's build, with its CUDA
  libraries (the fallback where the CPU index does not answer).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from super_bench.sandbox.isolated_pip import isolated_pip_environ

TorchSource = Literal["pypi", "cpu"]
TORCH_SOURCES: tuple[str, ...] = ("pypi", "cpu")
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_PACKAGES = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "torchdata"})
_PYTORCH_HOST = "download.pytorch.org"
_INDEX_FLAGS = ("--extra-index-url", "--index-url", "-i", "--find-links", "-f")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def is_torch(entry: str) -> bool:
    """Whether a requirement entry names one of the torch packages (``torch==2.2.1``, ``torchvision>=0.17``)."""
    match = _NAME.match(entry)
    return match is not None and re.sub(r"[-_.]+", "-", match.group(1)).lower() in TORCH_PACKAGES


def without_pytorch_indexes(options: list[str]) -> list[str]:
    """The list's pip options without the PyTorch indexes it names: where torch comes from is ``--torch``'s
    choice (an extra index would be searched for every package, not for torch alone)."""
    kept: list[str] = []
    i = 0
    while i < len(options):
        flag, eq, value = options[i].partition("=")
        if flag in _INDEX_FLAGS:
            url = value if eq else (options[i + 1] if i + 1 < len(options) else "")
            if _PYTORCH_HOST not in url:
                kept += options[i : i + (1 if eq else 2)]
            i += 1 if eq else 2
            continue
        kept.append(options[i])
        i += 1
    return kept


def install_steps(
    options: list[str],
    entries: list[str],
    pip_args: tuple[str, ...] = (),
    *,
    torch: TorchSource = "pypi",
    cutoff: datetime | None = None,
    torch_index: str = TORCH_CPU_INDEX,
) -> list[list[str]]:
    """The arguments of each ``pip install`` of the build, in order (what follows ``pip install``).

    With ``torch="cpu"``, a first step installs the list's torch packages alone, without their dependencies,
    from ``torch_index`` as the only index (named last, so that it wins over an index in ``pip_args``); the
    second installs the whole list from the other indexes, where the torch packages are then satisfied
    already (``2.2.1+cpu`` is ``torch==2.2.1``) and their dependencies resolved like any other package's."""
    dated = [f"--uploaded-prior-to={cutoff.isoformat()}"] if cutoff is not None else []
    steps: list[list[str]] = []
    torches = [e for e in entries if is_torch(e)] if torch == "cpu" else []
    if torches:
        steps.append([*pip_args, "--no-deps", "--index-url", torch_index, *torches])
    steps.append([*without_pytorch_indexes(options), *dated, *entries, *pip_args])
    return steps


def torch_notes(entries: list[str], torch: TorchSource, cutoff: datetime | None) -> list[str]:
    """What the record says of where torch came from (and of the date it was not filtered by)."""
    torches = [e for e in entries if is_torch(e)]
    if torch != "cpu" or not torches:
        return []
    note = f"torch packages from the PyTorch CPU index ({TORCH_CPU_INDEX}), without CUDA libraries"
    if cutoff is not None:
        note += f"; that index gives no upload times, so {', '.join(torches)} are as the list pins them, not as of"
        note += f" {cutoff.isoformat()}"
    return [note]


def pip_install(python: str, args: list[str]) -> int:
    """``python -m pip install ARGS``, its output going to this process's own."""
    command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-warn-script-location", *args]
    return subprocess.run(command, env=isolated_pip_environ()).returncode


def unavailable(python: str, entry: str, options: list[str]) -> str | None:
    """Why pip cannot find ``entry`` (its last line of complaint), or None when it can (metadata only)."""
    command = [python, "-m", "pip", "install", "--dry-run", "--no-deps", "--disable-pip-version-check", "--quiet"]
    command += ["--retries", "1", "--timeout", "30", *options, entry]
    proc = subprocess.run(command, capture_output=True, text=True, env=isolated_pip_environ())
    if proc.returncode == 0:
        return None
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("ERROR")]
    return lines[-1].removeprefix("ERROR: ") if lines else f"pip exited with status {proc.returncode}"


def install_list(
    python: str,
    options: list[str],
    entries: list[str],
    pip_args: tuple[str, ...] = (),
    *,
    torch: TorchSource = "pypi",
    cutoff: datetime | None = None,
    torch_index: str = TORCH_CPU_INDEX,
    echo: Callable[[str], None] = print,
) -> dict[str, str] | None:
    """Install the list into ``python``'s environment by ``install_steps``. Where installing everything at
    once fails, the entries that cannot be had are looked for and left out: returns them, with why (empty
    when none was), or None when the install failed for another reason."""
    steps = install_steps(options, entries, pip_args, torch=torch, cutoff=cutoff, torch_index=torch_index)
    for step in steps[:-1]:
        if pip_install(python, step) != 0:
            return None
    if pip_install(python, steps[-1]) == 0:
        return {}
    echo("Installing every entry at once failed; looking for the entries that cannot be had ...")
    common = [a for a in steps[-1] if a not in entries]
    skipped: dict[str, str] = {}
    for entry in entries:
        problem = unavailable(python, entry, common)
        if problem is not None:
            skipped[entry] = problem
            echo(f"  skipped {entry}: {problem}")
    if not skipped or pip_install(python, [a for a in steps[-1] if a not in skipped]) != 0:
        return None
    return skipped

"""The paper's pip in task environments: SUPER's runs had pip 24.0, and newer pips decide differently (pip 26
rejects old metadata that 24.0 accepted, and then falls back to older releases whose builds fail).

The default base gets pip 24.0, fetched once as a wheel with the harness's own pip (from its configured
indexes) and kept in the cache directory; where it cannot be had (offline, no index), the harness's own pip,
and the run's ``task_environment`` record says which. ``sandbox build`` ends its base with it too
(``install_papers_pip``), after a newer pip installed the package list. ``--packages-as-of`` does not need
pip's own date filter: the package cache applies it (``proxy``).
"""

from __future__ import annotations

import functools
import logging
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from super_bench.sandbox.isolated_pip import isolated_pip_environ
from super_bench.sandbox.lifetime.build_cache import cache_dir

PAPER_PIP = "24.0"
log = logging.getLogger(__name__)


@functools.cache
def paper_pip_wheel() -> Path | None:
    """pip 24.0's wheel, fetched once into the cache directory; None where it cannot be had."""
    directory = cache_dir() / "wheels"
    wheel = directory / f"pip-{PAPER_PIP}-py3-none-any.whl"
    if wheel.is_file():
        return wheel
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as fetched:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"]
        command += ["--only-binary=:all:", "--dest", fetched, f"pip=={PAPER_PIP}"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=isolated_pip_environ())
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("pip %s could not be fetched for task environments (%s): they get this pip", PAPER_PIP, e)
            return None
        found = Path(fetched) / wheel.name
        if proc.returncode != 0 or not zipfile.is_zipfile(found):
            why = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            log.warning("pip %s could not be fetched for task environments (%s): they get this pip", PAPER_PIP, why)
            return None
        found.replace(wheel)  # whole, or not at all
    return wheel


def unpack_wheel(wheel: Path, directory: Path) -> None:
    """Install a pure-Python wheel's files into a package directory (its names checked to stay inside)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("/") or ".." in name.split("/"):
                raise ValueError(f"{wheel} names a file outside itself: {name}")
        archive.extractall(directory)


def install_papers_pip(python: str) -> str | None:
    """Make pip 24.0 the pip of ``python``'s environment (from the cached wheel, no index asked); a note
    saying why not where it cannot be."""
    wheel = paper_pip_wheel()
    if wheel is None:
        return f"pip {PAPER_PIP} could not be fetched: the base keeps the pip that installed its packages"
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index"]
    # Found in the wheel's folder, not named by its path: a path would be recorded as where pip came from
    # (`pip freeze` would print `pip @ file:///...` of this machine, where a docker task prints `pip==24.0`).
    command += ["--find-links", str(wheel.parent), f"pip=={PAPER_PIP}"]
    proc = subprocess.run(command, capture_output=True, text=True, env=isolated_pip_environ())
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return f"pip {PAPER_PIP} could not be installed in the base ({why}): it keeps the one that installed the list"
    return None

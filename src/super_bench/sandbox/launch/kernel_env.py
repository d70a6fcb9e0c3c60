"""The kernel's own packages, kept apart from the task's: built once per Python version, shared read-only.

A kernel environment is a directory with ``kernel_boot.py`` (see its docstring for how the
kernel's modules and the task's are kept apart at run time) and ``packages/``, which holds
ipykernel and everything it needs. For the harness's own Python version the packages are copied
from the harness's installed distributions, so this works offline; for another version they are
installed with pip. Built into a temporary directory and renamed into place, so concurrent
builders never see half of one.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from super_bench.errors import SandboxError
from super_bench.sandbox.isolated_pip import isolated_pip_environ
from super_bench.sandbox.lifetime.build_cache import Lookup, build_once, remembered

BOOT_SCRIPT = Path(__file__).resolve().parents[1] / "in_task" / "kernel_boot.py"
_KERNEL_REQUIREMENT = "ipykernel"
# Bumped when the layout of a kernel environment changes, so old builds are not reused.
_LAYOUT = 1


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Installed:
    """An installed distribution, with the name and version its metadata gives."""

    name: str
    version: str
    dist: metadata.Distribution

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


def distribution_closure(roots: list[str]) -> list[Installed]:
    """The installed distributions ``roots`` need, themselves included (extras and markers as pip would
    see them here, with no extra)."""
    # Imported here: a run finds its kernel environment from a note, without reading requirements (and
    # packaging's import is about 25 ms of CPU at every start).
    from packaging.requirements import Requirement

    found: dict[str, Installed] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if _key(name) in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as e:
            raise SandboxError(f"the harness's own {name} is not installed, so the kernel cannot be built: {e}") from e
        # Parsed once: each access of ``dist.metadata`` (``.version`` and ``.requires`` too) parses the file
        # again, and the parses were most of the time a run spent finding its kernel environment.
        meta = dist.metadata
        found[_key(name)] = Installed(meta["Name"], meta["Version"], dist)
        requires = meta.get_all("Requires-Dist")
        if requires is None and dist.read_text("requires.txt") is not None:
            requires = dist.requires  # an egg-info installation
        for line in requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(found.values(), key=lambda d: _key(d.name))


def copy_distributions(dists: list[Installed], target: Path) -> None:
    """Copy the files of installed distributions (those of their records that lie in site-packages)."""
    for installed in dists:
        dist = installed.dist
        files = dist.files
        if files is None:
            raise SandboxError(f"{installed.name} was installed without a record of its files; reinstall it")
        for file in files:
            if file.parts and file.parts[0] == "..":
                continue  # console scripts and data outside site-packages
            source = Path(str(dist.locate_file(file)))
            if not source.is_file():
                continue  # a record may list byte code that was never written
            destination = target / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def _same_version(version: str) -> bool:
    return version == f"{sys.version_info[0]}.{sys.version_info[1]}"


@functools.cache
def kernel_env(python: str, version: str) -> Path:
    """The kernel environment for interpreters of ``version`` (``3.11``); built on first use.

    ``python`` is an interpreter of that version, used by pip when the packages cannot be copied
    from the harness's own (another Python version).
    """
    boot = BOOT_SCRIPT.read_bytes()
    found = _found_before(version, boot)
    if found is not None and found.built is not None:
        return found.built
    has_pip = False
    if _same_version(version):
        dists = distribution_closure([_KERNEL_REQUIREMENT])
        manifest = [d.pin for d in dists]
    else:
        # pip evaluates markers for the Python it runs on, not for ``--python-version``'s: an install for another
        # version by ours misses what only that version needs (IPython's exceptiongroup below 3.11). The key
        # says which pip installed it, so that one made by ours is not taken for one made by that Python's own.
        has_pip = _has_pip(python)
        dists, manifest = [], [f"pip:{_KERNEL_REQUIREMENT}", "its own pip" if has_pip else f"pip for {version}"]

    def fill(directory: Path) -> None:
        packages = directory / "packages"
        packages.mkdir()
        if dists:
            copy_distributions(dists, packages)
        else:
            _pip_install_target(python, version, packages, has_pip)
        (directory / "kernel_boot.py").write_bytes(boot)

    built = build_once("kernels", [_LAYOUT, version, manifest, hashlib.sha256(boot).hexdigest()], fill)
    if found is not None:
        found.remember(built)
    return built


def _found_before(version: str, boot: bytes) -> Lookup | None:
    """Where the lookup of this Python version's kernel environment is remembered (with the boot script). None
    for another Python version (its packages come from pip)."""
    if not _same_version(version):
        return None
    return remembered("kernels", [_LAYOUT, version, hashlib.sha256(boot).hexdigest()])


def _has_pip(python: str) -> bool:
    """Whether ``python`` runs here, with a pip of its own."""
    try:
        found = subprocess.run(
            [python, "-m", "pip", "--version"], capture_output=True, timeout=120, env=isolated_pip_environ()
        )
    except OSError:  # no such interpreter here (the Python of an image): ours installs for its version
        return False
    return found.returncode == 0


def _pip_install_target(python: str, version: str, target: Path, has_pip: bool) -> None:
    """Install ipykernel for another Python version: with that Python's own pip, else with ours for its version."""
    prefix = [python, "-m", "pip"] if has_pip else [sys.executable, "-m", "pip"]
    options = [] if has_pip else ["--python-version", version, "--only-binary=:all:"]
    command = [*prefix, "install", "--disable-pip-version-check", "--no-warn-script-location", "--quiet"]
    command += [*options, "--target", str(target), _KERNEL_REQUIREMENT]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=isolated_pip_environ())
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise SandboxError(
            f"cannot install the kernel's packages for Python {version} (pip install --target ... ipykernel "
            f"needs the package index): {' / '.join(detail)}"
        )

"""The paper's interpreter in the docker image: the one the local and bwrap bases are built from.

SUPER's runs had Python 3.10; Debian's bookworm, the usual base, has 3.11 and no 3.10 package. Where the base
image has no Python 3.10, the build of SUPER's image (of the kernel layer alone only with ``--python``) copies
the interpreter ``sandbox build`` would make the other backends' base from (``super_base.find_python``:
``--python``, else a 3.10 on PATH or from pyenv) into the image at ``/usr/local``, as the official Python
images keep theirs: its binary, shared library,
standard library (without its test suite and without anything installed in its ``site-packages``) and C
headers, so that tasks' sdists build against it. So both backends run one interpreter.

Only a self-contained installation can be copied (a prefix holding ``lib/pythonX.Y``, as pyenv, python.org's
``configure`` and python-build-standalone make); the few files that name its old prefix (sysconfig's data,
the ``config`` Makefile, pkg-config's files) are rewritten to ``/usr/local``, so that builds inside find the
headers and libraries where they are, and its byte code is compiled again there. The shared libraries it
links to (OpenSSL, libffi, SQLite, ...) come from the image's own Debian ``python3``, installed beside it; a
build step imports the modules that need them, so a copy that cannot run there stops the build, saying which.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from pydantic import Field

from super_bench._pydantic import Model
from super_bench.errors import SandboxError

INSIDE_PREFIX = "/usr/local"
# Modules whose extensions link to the system's libraries: imported in the build, so a missing one stops it.
_LINKED = "ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, uuid, decimal, hashlib, venv, ensurepip"

_FACTS = (
    "import json, sys, sysconfig; print(json.dumps({'prefix': sys.base_prefix, "
    "'version': '%d.%d.%d' % sys.version_info[:3], 'ldlibrary': sysconfig.get_config_var('LDLIBRARY') or '', "
    "'config': sysconfig.get_config_var('LIBPL') or '', 'sysconfigdata': sysconfig._get_sysconfigdata_name()}))"
)


class StagedPython(Model):
    """An interpreter copied into a build context, to go to ``/usr/local`` in the image."""

    version: str = Field(description="Its full version, e.g. 3.10.13")
    source: str = Field(description="The interpreter it was copied from (recorded on the host only)")

    @property
    def short(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def inside(self) -> str:
        return f"{INSIDE_PREFIX}/bin/python{self.short}"

    def dockerfile_lines(self, context_dir: str) -> list[str]:
        """Copy it into place and check that it runs there, with the standard library's linked modules."""
        return [
            f"COPY {context_dir} {INSIDE_PREFIX}/",
            f'RUN ldconfig && {self.inside} -c "import {_LINKED}" '
            # What CPython's own install leaves out of its compiling: test data that is not Python 3 on purpose.
            f"&& {self.inside} -W ignore -m compileall -q -j 0 -x 'bad_coding|badsyntax|lib2to3/tests/data' "
            f"{INSIDE_PREFIX}/lib/python{self.short}",
        ]


def stage_python(interpreter: str, target: Path) -> StagedPython:
    """Copy ``interpreter``'s installation into ``target`` (a directory of the build context) as it is to lie
    under ``/usr/local``; ``SandboxError`` where it is not a self-contained installation."""
    try:
        proc = subprocess.run([interpreter, "-S", "-c", _FACTS], capture_output=True, text=True, timeout=60)
        facts = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise SandboxError(f"cannot ask {interpreter} where it is installed: {e}") from e
    prefix = Path(facts["prefix"])
    short = ".".join(facts["version"].split(".")[:2])
    stdlib = prefix / "lib" / f"python{short}"
    binary = prefix / "bin" / f"python{short}"
    if str(prefix) in ("/", "/usr") or not (stdlib / "os.py").is_file() or not binary.is_file():
        raise SandboxError(
            f"{interpreter} (Python {facts['version']}) is not a self-contained installation (its prefix is "
            f"{prefix}): give --python an interpreter built into a prefix of its own (pyenv's, say), or use a base "
            f"image that has Python {short}"
        )
    (target / "bin").mkdir(parents=True)
    shutil.copy2(binary.resolve(), target / "bin" / f"python{short}")
    for link in ("python3", "python"):
        (target / "bin" / link).symlink_to(f"python{short}")
    lib = target / "lib"
    # Anything installed into the interpreter's own site-packages (pip, a .pth of this machine's) stays here.
    # Byte code is compiled again inside (compiled here, it names this machine's paths).
    skip = shutil.ignore_patterns("test", "site-packages", "__pycache__")
    shutil.copytree(stdlib, lib / f"python{short}", symlinks=True, ignore=skip)
    (lib / f"python{short}" / "site-packages").mkdir()
    for shared in prefix.joinpath("lib").glob(f"libpython{short}*.so*"):
        shutil.copy2(shared, lib / shared.name, follow_symlinks=False)
    if (prefix / "include" / f"python{short}").is_dir():
        shutil.copytree(prefix / "include" / f"python{short}", target / "include" / f"python{short}")
    if (prefix / "lib" / "pkgconfig").is_dir():
        shutil.copytree(prefix / "lib" / "pkgconfig", lib / "pkgconfig", symlinks=True)
    _relocate(target, str(prefix), facts)
    return StagedPython(version=facts["version"], source=str(binary))


def _relocate(target: Path, old: str, facts: dict[str, str]) -> None:
    """Rewrite the old prefix to ``/usr/local`` in the files that name it (pip reads sysconfig's data to
    build extensions; pkg-config and ``python-config`` read the others)."""
    short = ".".join(facts["version"].split(".")[:2])
    stdlib = target / "lib" / f"python{short}"
    named = [stdlib / f"{facts['sysconfigdata']}.py", *(target / "lib" / "pkgconfig").glob("*.pc")]
    if facts["config"]:
        named.append(stdlib / Path(facts["config"]).name / "Makefile")
    for path in named:
        if path.is_file() and not path.is_symlink():
            path.write_text(path.read_text().replace(old, INSIDE_PREFIX))

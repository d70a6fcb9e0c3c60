"""Source distributions made on the spot, for tests of installs that build: a tiny PEP 517 build backend
(``sbbackend``, as a wheel) and sdists that need it, so pip must install a build dependency from the index.

A package the backend builds records what its build environment could import (``BUILT_WITH``: the
top-level names of ``PROBED`` that were importable), which tells whether the task's base leaked into pip's
isolated build."""

from __future__ import annotations

import io
import tarfile
import textwrap
from pathlib import Path

from tests.support.sandboxes import tiny_wheel

PROBED = ("numpy",)

BACKEND = textwrap.dedent(
    '''
    """A minimal build backend: packs the source tree's package into a wheel."""
    import base64, hashlib, importlib.util, os, zipfile

    VALUE = 1


    def _meta():
        fields = dict(
            line.split(": ", 1) for line in open("PKG-INFO", encoding="utf-8").read().splitlines() if ": " in line
        )
        return fields["Name"], fields["Version"]


    def get_requires_for_build_wheel(config_settings=None):
        return []


    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        name, version = _meta()
        probed = [m for m in %(probed)r if importlib.util.find_spec(m) is not None]
        info = f"{name}-{version}.dist-info"
        files = {
            f"{name}/__init__.py": f"VALUE = 7\\nBUILT_WITH = {probed!r}\\n".encode(),
            f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n".encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: sbbackend\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
        }
        record = []
        for path, data in files.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        files[f"{info}/RECORD"] = ("\\n".join(record + [f"{info}/RECORD,,"]) + "\\n").encode()
        wheel = f"{name}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
            for path, data in files.items():
                zf.writestr(path, data)
        return wheel
    '''
) % {"probed": PROBED}


def backend_wheel(directory: Path) -> Path:
    """The build backend ``sbbackend`` 1.0 as a wheel."""
    wheel = tiny_wheel(directory, "sbbackend", 1)
    import zipfile

    rewritten = directory / "rewritten.whl"
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(rewritten, "w") as target:
        for info in source.infolist():
            data = BACKEND.encode() if info.filename == "sbbackend/__init__.py" else source.read(info)
            if info.filename.endswith("/RECORD"):
                data = b"\n".join(line for line in data.splitlines() if not line.startswith(b"sbbackend/")) + b"\n"
            target.writestr(info, data)
    rewritten.replace(wheel)
    return wheel


def sdist(directory: Path, name: str, version: str = "1.0") -> Path:
    """``name``-``version``.tar.gz: an sdist only, built by ``sbbackend`` (which pip must fetch to build it)."""
    members = {
        "pyproject.toml": '[build-system]\nrequires = ["sbbackend"]\nbuild-backend = "sbbackend"\n',
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    }
    path = directory / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{member}")
            info.size, info.mtime = len(data), 1_600_000_000
            tar.addfile(info, io.BytesIO(data))
    return path

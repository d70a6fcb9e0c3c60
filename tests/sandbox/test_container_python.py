"""The interpreter the docker image gets where its base has no Python 3.10: a self-contained installation of
this machine's, staged to lie under /usr/local (its sysconfig pointing there, nothing installed in its own
site-packages carried along), and refused, saying why, where it is not one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from super_bench.errors import SandboxError
from super_bench.sandbox.backends.container_python import INSIDE_PREFIX, stage_python

_HOST = os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def test_a_self_contained_interpreter_is_staged_to_lie_under_usr_local(tmp_path: Path) -> None:
    if sys.base_prefix in ("/", "/usr"):
        pytest.skip(f"this interpreter's prefix is {sys.base_prefix}, not an installation of its own")
    staged = stage_python(_HOST, tmp_path / "python")
    short = ".".join(map(str, sys.version_info[:2]))
    assert staged.version == ".".join(map(str, sys.version_info[:3])) and staged.short == short
    assert staged.inside == f"{INSIDE_PREFIX}/bin/python{short}"
    root = tmp_path / "python"
    # Byte code (which names this machine's paths) is compiled again inside; the test suite stays here.
    assert not list(root.rglob("__pycache__")) and not (root / "lib" / f"python{short}" / "test").exists()
    # It runs from where it lies, with the standard library's linked modules, and finds nothing installed.
    code = (
        "import json, site, ssl, sqlite3, sys, sysconfig; print(json.dumps({'prefix': sys.prefix, "
        "'site': site.getsitepackages(), 'libdir': sysconfig.get_config_var('LIBDIR')}))"
    )
    proc = subprocess.run([root / "bin" / "python3", "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["prefix"] == str(root) and found["libdir"] == f"{INSIDE_PREFIX}/lib"
    assert os.listdir(root / "lib" / f"python{short}" / "site-packages") == []
    # The files that name its prefix name /usr/local instead: builds inside find its headers.
    data = next((root / "lib" / f"python{short}").glob("_sysconfigdata_*.py")).read_text()
    assert sys.base_prefix not in data and f"'{INSIDE_PREFIX}/include/python{short}" in data
    assert (root / "include" / f"python{short}" / "Python.h").is_file()


def _fake(tmp_path: Path, output: str) -> str:
    script = tmp_path / "python3.10"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}\nEOF\n")
    script.chmod(0o755)
    return str(script)


def test_a_system_interpreter_is_refused_with_what_to_do(tmp_path: Path) -> None:
    facts = {"prefix": "/usr", "version": "3.10.12", "ldlibrary": "", "config": "", "sysconfigdata": "x"}
    with pytest.raises(SandboxError, match=r"not a self-contained installation \(its prefix is /usr\).*--python"):
        stage_python(_fake(tmp_path, json.dumps(facts)), tmp_path / "python")
    assert not (tmp_path / "python").exists()


def test_an_interpreter_that_does_not_answer_is_named(tmp_path: Path) -> None:
    fake = _fake(tmp_path, "Segmentation fault")
    with pytest.raises(SandboxError, match=f"cannot ask {fake} where it is installed"):
        stage_python(fake, tmp_path / "python")

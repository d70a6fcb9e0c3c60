"""Installed into a task's Python environment by super-bench when its package cache links installs.

When pip installs a wheel, this asks the harness's package cache (``SUPER_BENCH_PACKAGE_LINKS``) for hard
links to the wheel's files, which the cache keeps unpacked and read-only, and moves them into place instead
of writing copies; a wheel the cache does not hold, an install elsewhere (pip's isolated build environments,
``--target``, ``--prefix``), or any failure, leaves pip to install it as it always does. It changes only how
pip writes files it would write anyway, in this environment, never what pip decides.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import os
import shutil
import sys
import urllib.request
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

_MODULE = "pip._internal.operations.install.wheel"
_ENDPOINT = os.environ.get("SUPER_BENCH_PACKAGE_LINKS")
_staging: list[str | None] = []  # the links directory of the wheel being installed, if any


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _links_for(wheel_path: str) -> str | None:
    try:
        request = urllib.request.Request(f"{_ENDPOINT}/{_sha256(wheel_path)}", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=600) as response:
            path: str = json.loads(response.read())["path"]
            return path
    except Exception:  # no links: pip installs the wheel itself
        return None


def _into_this_environment(scheme: Any) -> bool:
    """Whether pip installs into this environment, where the links are made (not into an isolated build
    environment, a ``--target`` or a ``--prefix`` elsewhere, which may be on another file system)."""
    own = os.path.realpath(sys.prefix).rstrip(os.sep) + os.sep
    places = [getattr(scheme, kind, None) for kind in ("purelib", "platlib")]
    return all(isinstance(p, str) and os.path.realpath(p).startswith(own) for p in places)


def _patch(module: Any) -> None:
    original_install, original_save = module.install_wheel, module.ZipBackedFile.save

    def install_wheel(name: str, wheel_path: str, *args: Any, **kwargs: Any) -> Any:
        scheme = kwargs.get("scheme", args[0] if args else None)
        _staging.append(_links_for(wheel_path) if _into_this_environment(scheme) else None)
        try:
            return original_install(name, wheel_path, *args, **kwargs)
        finally:
            staging = _staging.pop()
            if staging:
                shutil.rmtree(staging, ignore_errors=True)

    def save(self: Any) -> None:
        staging = _staging[-1] if _staging else None
        if staging:
            source = os.path.join(staging, *str(self.src_record_path).split("/"))
            if os.path.isfile(source) and not os.path.islink(source):
                try:
                    os.makedirs(os.path.dirname(self.dest_path), exist_ok=True)  # as pip's own save does first
                    if os.path.lexists(self.dest_path):
                        os.unlink(self.dest_path)
                    os.rename(source, self.dest_path)
                    return
                except OSError:
                    pass  # another file system, say: pip writes the file itself, as it would have
        original_save(self)

    module.install_wheel = install_wheel
    module.ZipBackedFile.save = save


class _Finder(importlib.abc.MetaPathFinder):
    """Patches pip's wheel installer as it is imported (nothing else is touched)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            if hasattr(module, "install_wheel") and hasattr(getattr(module, "ZipBackedFile", None), "save"):
                _patch(module)

        loader.exec_module = exec_module
        return spec


if _ENDPOINT:
    sys.meta_path.insert(0, _Finder())

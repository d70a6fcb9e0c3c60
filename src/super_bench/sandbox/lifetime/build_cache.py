"""Where super-bench keeps what it builds once and reuses: kernel environments, the default task packages,
the base environment of ``super-bench sandbox build``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

_COMPLETE = ".complete"


def cache_dir() -> Path:
    """``$SUPER_BENCH_ENV_CACHE``, else ``super-bench`` in the user's cache directory (``$XDG_CACHE_HOME`` or
    ~/.cache)."""
    if os.environ.get("SUPER_BENCH_ENV_CACHE"):
        return Path(os.environ["SUPER_BENCH_ENV_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "super-bench"


def build_once(kind: str, key: object, fill: Callable[[Path], None]) -> Path:
    """``<cache>/<kind>/<digest of key>``, made by ``fill`` in a temporary directory beside it and renamed
    into place, so that concurrent builders never see half of one; the first to finish wins. Made
    readable by every user (sandboxes run agent code as users of their own)."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    target = cache_dir() / kind / digest
    if (target / _COMPLETE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=target.parent))
    try:
        fill(building)
        (building / _COMPLETE).write_text(json.dumps(key, default=str) + "\n")
        readable_by_all(building)
        try:
            os.rename(building, target)
        except OSError:
            if not (target / _COMPLETE).is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def readable_by_all(root: Path) -> None:
    """Give a tree the modes that let any user read it and only its owner change it."""
    for dirpath, _, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            os.chmod(path, 0o755 if os.stat(path).st_mode & 0o100 else 0o644)

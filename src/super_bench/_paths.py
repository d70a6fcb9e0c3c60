"""Where super-bench keeps what outlives a run on this machine (standard library only: the command line reads
it before anything else is imported)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SUPER_BENCH_ENV_CACHE``, else ``super-bench`` in the user's cache directory (``$XDG_CACHE_HOME`` or
    ~/.cache)."""
    if os.environ.get("SUPER_BENCH_ENV_CACHE"):
        return Path(os.environ["SUPER_BENCH_ENV_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "super-bench"

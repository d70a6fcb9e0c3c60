"""A small real disk, filled: what the full-disk tests and benchmark share."""

from __future__ import annotations

import os
from pathlib import Path


def fill(disk: Path, leave: int = 0) -> None:
    """Take every free byte of ``disk`` but ``leave`` (whole pages), with one file, ``filler``."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    if os.statvfs(disk).f_bavail:
        raise RuntimeError(f"{disk} still has room once filled")
    if leave:
        page = os.statvfs(disk).f_frsize
        os.truncate(filler, (filler.stat().st_size // page) * page - leave)
        if os.statvfs(disk).f_bavail * page < leave:
            raise RuntimeError(f"{disk} has less than {leave} bytes free after making room")

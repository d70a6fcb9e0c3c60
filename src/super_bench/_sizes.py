"""Sizes as people write them (``8g``, ``512m``) and as the harness says them (``64 MiB``): powers of 1024."""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", re.IGNORECASE)


def parse_size(value: str | int) -> int:
    """Bytes from ``8g``, ``512m``, ``1.5G``, ``100k`` (powers of 1024) or a plain number of bytes."""
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"not a size: {value!r} (write it like 8g, 512m or 1048576)")
    number, unit = match.groups()
    return int(float(number) * 1024 ** "bkmgt".index(unit.lower() or "b"))


def human_size(size: int) -> str:
    """``size`` bytes as people write it, in powers of 1024: ``10 B``, ``64 MiB``, ``1.5 GiB``."""
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if size >= 1024**power:
            value = size / 1024**power
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{size} B"

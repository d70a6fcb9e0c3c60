"""docs/architecture.md's layer tables are the layers import-linter checks (pyproject.toml), and every module of the
package is in one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "super_bench"


def _contract(container: str) -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and c["containers"] == [container]]
    return [{name.strip() for name in layer.split("|")} for layer in layers]


def _table(heading: str) -> list[set[str]]:
    """The modules of each row of the table under ``heading``, in order (a row's names in backquotes, in its
    second cell, without a trailing ``/`` or ``.py``)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    return [{re.sub(r"(/|\.py)$", "", name) for name in re.findall(r"`([^`]+)`", row[2])} for row in rows]


def test_the_layer_table_is_the_checked_one_and_holds_every_module() -> None:
    layers = _contract("super_bench")
    assert _table("The layers") == layers
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.parent.name for p in PACKAGE.glob("*/__init__.py")
    }
    modules |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert modules == set().union(*layers)


def test_the_notebook_environments_table_is_its_checked_one() -> None:
    layers = _contract("super_bench.environment")
    assert _table("The notebook environment") == layers
    modules = {p.stem for p in (PACKAGE / "environment").glob("*.py") if p.stem != "__init__"} | {"kernel"}
    assert modules == set().union(*layers)

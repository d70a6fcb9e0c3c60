"""docs/architecture.md agrees with the import contracts of pyproject.toml that ``lint-imports`` checks: the
package's layer table is the declared layers and names every module, the notebook environment's table is its
declared rooms, the sandbox map is the sandbox's declared rooms, and every module
under ``sandbox/`` is either its face or forbidden to the code outside it."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import super_bench.sandbox

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on; the contracts are the same on 3.10
ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]
# What code outside sandbox/ may import besides the package itself.
FACE = {"conformance", "supply"}


def contract(prefix: str) -> dict[str, Any]:
    (found,) = [c for c in CONTRACTS if c["name"].startswith(prefix)]
    return found


def section(heading: str) -> str:
    return DOC.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def documented_layers(heading: str) -> list[set[str]]:
    """The names in backquotes of the second column of each row of the section's table (without a trailing ``/``
    or ``.py``), by its layer number."""
    layers: dict[int, set[str]] = {}
    for line in section(heading).splitlines():
        row = re.match(r"\| (\d+) \| ([^|]*) \|", line)
        if row:
            names = re.findall(r"`([^`]+)`", row[2])
            layers.setdefault(int(row[1]), set()).update(re.sub(r"(/|\.py)$", "", name) for name in names)
    return [layers[number] for number in sorted(layers)]


def declared_layers(prefix: str) -> list[set[str]]:
    return [{name.strip() for name in layer.split("|")} for layer in contract(prefix)["layers"]]


def test_the_layer_table_is_the_declared_layers_and_holds_every_module() -> None:
    layers = declared_layers("Layers")
    assert documented_layers("The layers") == layers
    package = ROOT / "src" / "super_bench"
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in package.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert modules == set().union(*layers)


def test_the_notebook_environments_table_is_its_declared_rooms() -> None:
    layers = declared_layers("The notebook environment's rooms")
    assert documented_layers("The notebook environment") == layers
    modules = {p.stem for p in (ROOT / "src" / "super_bench" / "environment").glob("*.py") if p.stem != "__init__"}
    assert modules | {"kernel"} == set().union(*layers)


def test_the_sandbox_map_is_the_declared_rooms() -> None:
    assert documented_layers("The sandbox map") == declared_layers("Sandbox rooms")


def test_every_module_under_the_sandbox_but_its_face_is_forbidden_outside_it() -> None:
    face = contract("The sandbox's face")
    rooms = {module.name for module in pkgutil.iter_modules(super_bench.sandbox.__path__)}
    forbidden = {name.removeprefix("super_bench.sandbox.") for name in face["forbidden_modules"]}
    assert forbidden <= rooms
    assert rooms - forbidden == FACE
    # The face is every module of the package but the sandbox, each one a source; none of the sandbox's.
    assert face["source_modules"] == ["super_bench.*"]
    assert all(rule.startswith("super_bench.sandbox") for rule in face["ignore_imports"])
    said = section("The sandbox map").split("\n| Layer", 1)[0]
    assert all(f"`{name}`" in said for name in FACE)
    assert "No module outside `sandbox/` imports anything else under it" in said


def test_every_name_the_face_exports_is_there() -> None:
    missing = [name for name in super_bench.sandbox.__all__ if not hasattr(super_bench.sandbox, name)]
    assert missing == []


def test_the_tests_mirror_the_package() -> None:
    package = ROOT / "src" / "super_bench"
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    top_modules = {p.stem for p in package.glob("*.py")}
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")}
    assert folders <= packages | {"e2e", "docs", "support"}, folders - packages
    loose = [p for p in tests.glob("test_*.py")]
    assert len(loose) <= 10
    # A loose test file is named after the top-level module it tests.
    assert {p.stem.removeprefix("test_") for p in loose} <= top_modules
    assert not list((tests / "support").glob("test_*.py"))

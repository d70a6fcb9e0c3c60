"""Every shell block of README.md and docs/integrations.md, run as written by a reader: each in a fresh copy
of the repository (the reader's clone), with no word changed. A block that cannot run here (it needs the
network, an API key, hours, or has placeholders to fill in) carries a visible marker in the document's
source, ``<!-- docs-test: skip: why -->`` on the line before it, and the list of those is checked here,
so that no block is left out without saying so."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/integrations.md"]
BLOCK = re.compile(r"(?:<!-- docs-test: skip: (?P<why>.+?) -->\n)?```(?:bash|sh|console)\n(?P<code>.*?)```", re.DOTALL)

# The blocks left out, by their first line, and what runs their commands instead.
SKIPPED = {
    (
        "README.md",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest -n auto --dist loadscope",
    ),
    ("README.md", "super-bench tasks list                          # the demo Expert tasks"),
    (
        "README.md",
        "super-bench run --set masked --workers 4 --out runs/masked        # 4 tasks at once, each in its own sandbox",
    ),
    ("docs/integrations.md", "pip install 'super-bench[server]'"),
    ("docs/integrations.md", "pip install 'super-bench[inspect]'"),
    ("docs/integrations.md", "pip install 'super-bench[mcp]'"),
    ("docs/integrations.md", "printf '%s\\n' '#!/bin/sh' \\"),
}


def blocks() -> list[tuple[str, str, str | None]]:
    """``(document, code, why it is skipped or None)`` of every shell block."""
    found = []
    for name in DOCS:
        text = (ROOT / name).read_text()
        assert text.count("<!-- docs-test:") == len(re.findall(r"<!-- docs-test: skip: .+? -->\n```", text)), (
            f"{name}: a docs-test marker that is not on the line before a shell block"
        )
        found += [(name, m["code"], m["why"]) for m in BLOCK.finditer(text)]
    return found


def to_run(first_line: str) -> str:
    (code,) = [code for _, code, why in blocks() if why is None and code.startswith(first_line)]
    return code


def test_the_blocks_skipped_are_exactly_those_marked() -> None:
    marked = {(name, code.splitlines()[0]) for name, code, why in blocks() if why is not None}
    assert marked == SKIPPED
    ran = {code.splitlines()[0] for _, code, why in blocks() if why is None}
    # Each block not marked is run by a test below.
    assert ran == {QUICK_START, RECIPE, MCP_RECIPE}


QUICK_START = "python3 -m venv .venv && . .venv/bin/activate && pip install . && super-bench run"
MCP_RECIPE = 'super-bench run --set masked --task-ids tinyreg_goal --out runs/mcp-demo --agent "mcp:python $PWD/tests/support/mcp_client.py gold"'
RECIPE = 'H="Authorization: Bearer $SUPER_BENCH_TOKEN"; J="Content-Type: application/json"; S=http://127.0.0.1:8765/v1/sessions'


def a_clone(tmp_path: Path) -> Path:
    """The repository's files as a fresh clone has them (those git tracks or would), nothing built."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    clone = tmp_path / "super-bench"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    return clone


def a_readers_shell() -> dict[str, str]:
    """The environment of a reader's shell: no virtual environment active (this test's left off PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "RAY_ADDRESS")}
    ours = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != ours)
    env["COLUMNS"] = "80"
    return env


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    clone = a_clone(tmp_path)
    done = subprocess.run(
        ["bash", "-c", to_run(QUICK_START)],
        cwd=clone,
        env=a_readers_shell(),
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = re.search(r"Run directory: (runs/\S+-expert-gold)", done.stdout)
    assert found, done.stdout[-3000:]
    summary = json.loads((clone / found.group(1) / "summary.json").read_text())
    assert summary["metrics"]["output_match"] == 1.0


def private_network() -> bool:
    """Whether bwrap can give a command a network of its own here (a loopback no other process uses)."""
    if shutil.which("bwrap") is None:
        return False
    tried = subprocess.run(["bwrap", "--unshare-net", "--dev-bind", "/", "/", "true"], capture_output=True)
    return tried.returncode == 0


@pytest.mark.slow
def test_the_server_recipe_runs_as_written(tmp_path: Path) -> None:
    """The curl recipe against `super-bench serve` started as documented (its default port): both in a
    network of their own, so that the port is free whatever else runs on this machine."""
    if not private_network():
        pytest.skip("bwrap cannot make a private network here, so the recipe's fixed port may be taken")
    for tool in ("curl", "jq"):
        if shutil.which(tool) is None:
            pytest.skip(f"the recipe needs {tool}, which is not installed here")
    (tmp_path / "recipe.sh").write_text(to_run(RECIPE))
    (tmp_path / "tmp").mkdir()
    serve = f'"{sys.executable}" -m super_bench serve'
    script = (
        f"{serve} > serve.log 2>&1 & server=$!\n"
        "until curl -s -o /dev/null http://127.0.0.1:8765/openapi.json; do sleep 0.2; done\n"
        "bash -e recipe.sh; status=$?\n"
        "kill -INT $server; wait $server\n"
        "exit $status\n"
    )
    env = {**a_readers_shell(), "SUPER_BENCH_TOKEN": "recipe-token", "TMPDIR": str(tmp_path / "tmp")}
    done = subprocess.run(
        ["bwrap", "--unshare-net", "--dev-bind", "/", "/", "--die-with-parent", "bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = (tmp_path / "serve.log").read_text() if (tmp_path / "serve.log").exists() else ""
    assert done.returncode == 0, done.stdout + done.stderr + log
    observation, finished, metrics = done.stdout.split("\n", 2)
    assert "Cloning into 'tinyreg'" in observation, done.stdout + log
    assert finished == "true"
    assert json.loads(metrics)["output_match"] == 1.0


def test_the_mcp_recipe_runs_as_written(tmp_path: Path) -> None:
    """The no-key `--agent mcp:` recipe, in a fresh clone, with this environment's `super-bench` and `python` (which
    have the mcp extra) first on PATH: the scripted client solves the task."""
    clone = a_clone(tmp_path)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    done = subprocess.run(
        ["bash", "-e", "-c", to_run(MCP_RECIPE)], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((clone / "runs" / "mcp-demo" / "summary.json").read_text())
    assert summary["metrics"]["output_match"] == 1.0

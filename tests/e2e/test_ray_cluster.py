"""A Ray cluster of two nodes (two raylets on this machine, started with ``ray start`` as on a real cluster) with
token authentication: the demo Expert set runs on both nodes and each row names its node; a client without the
token is refused with a message that says what to set. The cluster is always stopped, by its own processes."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from super_bench import load_tasks
from super_bench.sandbox.conformance import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def two_node_cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The head's address, and the environment a client of the cluster needs (its token)."""
    pytest.importorskip("ray")
    ray = Path(sys.executable).with_name("ray")
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, **auth}  # no other cluster's
    # A directory of the cluster's own (never another program's instance), with a short path: Ray's unix
    # sockets live there and their paths must fit in 107 bytes.
    temp = Path(tempfile.mkdtemp(prefix="sbray"))
    address = f"127.0.0.1:{free_port()}"
    common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    head = ["--head", "--port", address.rpartition(":")[2], "--include-dashboard", "false", "--temp-dir", str(temp)]
    nodes: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(name: str, args: list[str]) -> None:
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(ray), "start", *args, *common], env=env, stdout=out, stderr=out)
        nodes.append((process, log))
        started = wait_for(lambda: "Ray runtime started" in log.read_text() or process.poll() is not None, 120)
        assert started and process.poll() is None, f"the {name} node did not start: {log.read_text()[-2000:]}"

    try:
        start("head", head)
        start("worker", ["--address", address])
        yield address, auth
    finally:
        for process, _ in reversed(nodes):  # --block: a node stops its raylet and workers on SIGTERM
            process.send_signal(signal.SIGTERM)
        for process, _ in nodes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(temp, ignore_errors=True)


def super_bench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.slow
def test_a_two_node_cluster_with_token_authentication_runs_the_demo_on_both_nodes(
    two_node_cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, auth = two_node_cluster
    client = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    client["COLUMNS"] = "200"
    out = tmp_path / "run"
    common = ["run", "--executor", "ray", "--ray-address", address, "--sandbox", "local"]
    done = super_bench(*common, "--out", str(out), env={**client, **auth})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == sorted(t.task_id for t in load_tasks("demo", "expert"))
    assert all(r["status"] == "completed" for r in rows)
    hosts, node_ids = zip(*(r["node"].split("/") for r in rows), strict=True)
    assert set(hosts) == {socket.gethostname()} and len(set(node_ids)) == 2  # both raylets ran tasks

    # The runtime-environment recipe of docs/runner.md: variables given there reach agent code on the nodes.
    mark = secrets.token_hex(8)
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"type": "execute", "content": "!echo $SB_RECIPE_MARK"}, {"type": "submit"}]))
    recipe = (
        "import sys, ray, super_bench as sb\n"
        "ray.init(address=sys.argv[1], runtime_env={'env_vars': {'SB_RECIPE_MARK': sys.argv[2]}})\n"
        "sb.run(executor='ray', agent='replay:' + sys.argv[3], task_ids=['tinyreg'], out=sys.argv[4],\n"
        "       env={'sandbox': {'backend': 'local'}}, progress=False)\n"
    )
    recipe_out = tmp_path / "recipe"
    ran = subprocess.run(
        [sys.executable, "-c", recipe, address, mark, str(actions), str(recipe_out)],
        capture_output=True,
        text=True,
        env={**client, **auth},
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    trajectory = json.loads((recipe_out / "tasks" / "tinyreg" / "trajectory.json").read_text())
    assert trajectory["steps"][0]["observation"].strip() == mark

    # Without the token (none in the environment, none in the home directory) the cluster refuses the client.
    home = tmp_path / "home"
    home.mkdir()
    refused = super_bench(*common, "--out", str(tmp_path / "refused"), env={**client, "HOME": str(home)})
    assert refused.returncode != 0
    assert f"cannot start Ray on {address}" in refused.stderr and "RAY_AUTH_MODE=token" in refused.stderr

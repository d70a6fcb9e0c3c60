"""`super-bench serve` stops cleanly on SIGINT and SIGTERM: a real server process, a real HTTP client with a
step running, a signal. The step is answered with JSON (410, the session closed), the log has no traceback,
and no sandbox or process of it is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import pytest

from super_bench import EnvConfig, SandboxConfig
from super_bench.integrations.server.sessions import ServerStopping, SessionManager, SessionRequest

TOKEN = "stop-token"


def processes_naming(text: str) -> list[str]:
    """The command lines of this machine's processes that name ``text`` (a folder of the test's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (entry / "environ").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if text in line or text in environ:
                found.append(f"{entry.name}: {line}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_step_answers_json_and_leaves_nothing(tmp_path: Path, signum: signal.Signals) -> None:
    temp = tmp_path / "tmp"  # the sandboxes' root: the system's temporary folder, as the server has it
    temp.mkdir()
    env = {**os.environ, "SUPER_BENCH_TOKEN": TOKEN, "TMPDIR": str(temp)}
    server = subprocess.Popen(
        [sys.executable, "-m", "super_bench", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        url = banner.split()[4]
        client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/v1/sessions")
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        created = client.post("/v1/sessions", json={"query": "Wait."})
        assert created.status_code == 201, created.text
        session = created.json()["session_id"]
        with ThreadPoolExecutor(1) as pool:
            cell = "import time\nprint('started', flush=True)\ntime.sleep(300)"
            in_flight = pool.submit(
                client.post, f"/v1/sessions/{session}/step", json={"type": "execute", "content": cell}
            )
            # The session reports no idle time only while one of its steps runs.
            while client.get("/v1/sessions").json()[0]["idle_seconds"] != 0:
                assert not in_flight.done(), in_flight.result().text
                time.sleep(0.05)
            time.sleep(0.5)
            server.send_signal(signum)
            answer = in_flight.result(timeout=120)
        assert answer.status_code == 410, answer.text
        assert "closed while the step ran: the server stopped" in answer.json()["detail"]
        _, log = server.communicate(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, log
    assert "Traceback" not in log and "Exception" not in log and "ERROR" not in log, log
    assert sorted(p.name for p in temp.iterdir()) == []  # no sandbox left
    # The harness's watchdog (sandbox/lifetime) sees the server gone and exits in its own time: waited for.
    deadline = time.monotonic() + 60
    while (left := processes_naming(str(temp))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []


def test_no_session_starts_once_the_server_stops(tmp_path: Path) -> None:
    manager = SessionManager(EnvConfig(sandbox=SandboxConfig(backend="local", root=tmp_path)))

    async def stop_then_start() -> None:
        await manager.close_all()
        await manager.create(SessionRequest(query="Too late."))

    with pytest.raises(ServerStopping, match="the server is stopping") as raised:
        anyio.run(stop_then_start)
    assert raised.value.status == 503 and list(tmp_path.iterdir()) == []

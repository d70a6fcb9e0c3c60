"""The environment server: real HTTP requests against a real uvicorn server on a free local port."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from super_bench import EnvConfig, SandboxConfig
from super_bench.cli._serving import is_loopback
from super_bench.integrations.server.serving import make_server
from super_bench.integrations.server.sessions import SessionManager
from super_bench.sandbox.conformance import wait_for

TOKEN = "test-token"


class LiveServer:
    """A uvicorn server in a thread, on 127.0.0.1 and a port the OS picked."""

    def __init__(self, manager: SessionManager, token: str = TOKEN) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self.server = make_server(manager, token, log_level="warning")
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [listener]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.should_exit = True
            self.thread.join(60)
            assert not self.thread.is_alive()
        self.client.close()


@pytest.fixture
def start_server(tmp_sandbox_root: Path) -> Iterator[Callable[..., LiveServer]]:
    servers: list[LiveServer] = []

    def start(cell_timeout: float = 60, sandbox: dict[str, Any] | None = None, **settings: Any) -> LiveServer:
        config = EnvConfig(cell_timeout=cell_timeout, sandbox=SandboxConfig(root=tmp_sandbox_root, **(sandbox or {})))
        server = LiveServer(SessionManager(config, **settings))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(start_server: Callable[..., LiveServer]) -> LiveServer:
    return start_server()


def new_session(server: LiveServer, **body: Any) -> dict[str, Any]:
    response = server.client.post("/v1/sessions", json=body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def step(server: LiveServer, session_id: str, **action: Any) -> dict[str, Any]:
    response = server.client.post(f"/v1/sessions/{session_id}/step", json=action)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def test_every_request_needs_the_token(server: LiveServer) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": ""}):
        requests = [("GET", "/v1/sessions"), ("POST", "/v1/sessions"), ("POST", "/openapi.json")]
        for method, path in [*requests, ("DELETE", "/openapi.json")]:
            response = httpx.request(method, server.url + path, headers=headers, json={"query": "x"})
            assert response.status_code == 401, (headers, path)
            assert response.headers["www-authenticate"] == "Bearer"
            assert "Authorization: Bearer" in response.json()["detail"]
    # Only GET of exactly /openapi.json is open; paths that merely resemble it are not (sent as they are,
    # which httpx would not do: it resolves dot segments).
    host, port = server.url.removeprefix("http://").split(":")
    for path in ("/openapi.json/", "/OPENAPI.JSON", "/v1/../openapi.json", "/openapi.json%00", "//openapi.json"):
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request("GET", path)
        assert connection.getresponse().status == 401, path
        connection.close()
    # Bad JSON without a token is refused for the token, before the body is looked at.
    response = httpx.post(server.url + "/v1/sessions", content=b"{not json")
    assert response.status_code == 401
    assert server.client.get("/v1/sessions").json() == []


def test_openapi_description_is_served_without_the_token(server: LiveServer) -> None:
    # As `super-bench serve --help` says: the description is open, for tools that read it.
    assert httpx.get(server.url + "/openapi.json").json() == server.client.get("/openapi.json").json()
    schema = httpx.get(server.url + "/openapi.json", headers={"Authorization": "Bearer wrong"}).json()
    assert {"/v1/sessions", "/v1/sessions/{session_id}", "/v1/sessions/{session_id}/step"} <= set(schema["paths"])
    assert schema["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert {"get", "delete"} <= set(schema["paths"]["/v1/sessions/{session_id}"])


@pytest.mark.slow
def test_an_episode_from_start_to_scores(server: LiveServer, tmp_sandbox_root: Path) -> None:
    started = new_session(server, task_id="tinyreg")
    sid = started["session_id"]
    assert started["task_id"] == "tinyreg" and started["pre_executed"] == []
    assert "TinyReg" in started["observation"]
    assert len(list(tmp_sandbox_root.iterdir())) == 1  # its sandbox

    for cell in (
        "!git clone https://github.com/super-bench-demo/tinyreg",
        "%cd tinyreg",
        "!python train.py --config configs/base.json --epochs 5 --limit 50",
    ):
        reply = step(server, sid, type="execute", content=cell, thought="next")
        assert reply["step"]["outcome"] == "ok" and not reply["done"], reply
        assert not reply["terminated"] and not reply["truncated"] and reply["step"]["stop_reason"] is None
    assert "Test MSE: 7.4031" in reply["step"]["observation"]

    state = server.client.get(f"/v1/sessions/{sid}").json()
    assert not state["done"] and state["scores"] is None
    assert [s["thought"] for s in state["trajectory"]["steps"]] == ["next"] * 3

    reply = step(server, sid, type="submit", content={"test_mse": 7.4031})
    assert reply["done"] and reply["stop_reason"] == "submitted"
    assert reply["terminated"] and not reply["truncated"]
    assert (reply["step"]["terminated"], reply["step"]["stop_reason"]) == (True, "submitted")
    assert list(tmp_sandbox_root.iterdir()) == []  # the sandbox stops as soon as the episode ends

    state = server.client.get(f"/v1/sessions/{sid}").json()
    assert state["done"] and state["trajectory"]["submission"] == {"test_mse": 7.4031}
    assert state["scores"]["metrics"] == {"output_match": 1.0, "landmarks": 1.0, "entrypoint": None, "submitted": 1.0}

    response = server.client.post(f"/v1/sessions/{sid}/step", json={"type": "execute", "content": "1"})
    assert response.status_code == 409 and "the episode is over (submitted)" in response.json()["detail"]

    assert server.client.delete(f"/v1/sessions/{sid}").json()["scores"]["metrics"]["output_match"] == 1.0
    response = server.client.get(f"/v1/sessions/{sid}")
    assert response.status_code == 410 and "deleted" in response.json()["detail"]


@pytest.mark.slow
def test_masked_tasks_start_with_their_pre_executed_cells(server: LiveServer) -> None:
    started = new_session(server, task_id="tinyreg_goal", task_set="masked")
    pre = started["pre_executed"]
    assert [s["action"]["content"].splitlines()[0] for s in pre] == [
        "!git clone -- https://github.com/super-bench-demo/tinyreg",
        "%cd tinyreg",
    ]
    assert all(s["pre_executed"] for s in pre) and "Cloning into" in pre[0]["observation"]
    reply = step(server, started["session_id"], type="execute", content="!ls")
    assert "train.py" in reply["step"]["observation"]  # the agent starts in the cloned repository


@pytest.mark.slow
def test_bad_requests_get_clear_answers(server: LiveServer) -> None:
    client = server.client

    def expect(status: int, response: httpx.Response, *fragments: str) -> None:
        assert response.status_code == status, response.text
        detail = response.json()["detail"]
        assert isinstance(detail, str) and "Traceback" not in detail
        for fragment in fragments:
            assert fragment in detail, detail

    headers = {"Content-Type": "application/json"}
    expect(400, client.post("/v1/sessions", content=b'{"task_id": ', headers=headers), "not valid JSON")
    expect(422, client.post("/v1/sessions", json={}), "either task_id")
    expect(422, client.post("/v1/sessions", json={"task_id": "tinyreg", "query": "x"}), "either task_id")
    expect(422, client.post("/v1/sessions", json={"task_id": "tinyreg", "colour": 1}), "colour")
    expect(422, client.post("/v1/sessions", json={"task_id": "tinyre"}), "unknown task id", "did you mean tinyreg")
    expect(422, client.post("/v1/sessions", json={"task_id": "tinyreg", "source": "/etc"}), "not offered", "demo, hf")
    expect(422, client.post("/v1/sessions", json={"task_id": "tinyreg", "task_set": "big"}), "task_set")
    expect(404, client.post("/v1/sessions/nope/step", json={"type": "execute", "content": "1"}), "no session 'nope'")
    expect(404, client.get("/v1/sessions/nope"), "no session")
    expect(404, client.delete("/v1/sessions/nope"), "no session")

    sid = new_session(server, query="Print hello.")["session_id"]
    expect(400, client.post(f"/v1/sessions/{sid}/step", content=b"[1,", headers=headers), "not valid JSON")
    expect(422, client.post(f"/v1/sessions/{sid}/step", json={"type": "run", "content": "1"}), "type", "execute")
    expect(422, client.post(f"/v1/sessions/{sid}/step", json={"content": "1"}), "type", "Field required")
    expect(422, client.post(f"/v1/sessions/{sid}/step", json=["execute"]), "dictionary")
    # An action that is well formed but pointless is the environment's business: recorded as invalid.
    reply = step(server, sid, type="continue_wait")
    assert reply["step"]["outcome"] == "invalid" and "nothing to wait for" in reply["step"]["observation"]
    reply = step(server, sid, type="submit", content="not json")
    assert reply["step"]["outcome"] == "invalid" and not reply["done"]


def test_a_sandbox_that_cannot_start_is_a_503_and_frees_its_slot(start_server: Callable[..., LiveServer]) -> None:
    server = start_server(sandbox={"task_python": "/nonexistent/python"}, max_sessions=1)
    for _ in range(2):  # the failed start does not keep the only slot
        response = server.client.post("/v1/sessions", json={"query": "x"})
        assert response.status_code == 503, response.text
        assert "the sandbox failed" in response.json()["detail"]
    assert server.client.get("/v1/sessions").json() == []


@pytest.mark.slow
def test_the_limit_on_sessions_at_once(start_server: Callable[..., LiveServer]) -> None:
    server = start_server(max_sessions=1)
    first = new_session(server, query="one")["session_id"]
    response = server.client.post("/v1/sessions", json={"query": "two"})
    assert response.status_code == 429
    assert "at most 1 session(s) at once" in response.json()["detail"]
    # A finished episode holds no sandbox, so it does not count.
    assert step(server, first, type="submit", content="1")["done"]
    second = new_session(server, query="two")["session_id"]
    assert server.client.post("/v1/sessions", json={"query": "three"}).status_code == 429
    server.client.delete(f"/v1/sessions/{second}")
    new_session(server, query="three")


@pytest.mark.slow
def test_idle_sessions_are_reaped(start_server: Callable[..., LiveServer], tmp_sandbox_root: Path) -> None:
    server = start_server(idle_timeout=2.0)
    sid = new_session(server, query="x")["session_id"]
    busy = new_session(server, query="y")["session_id"]
    # A session whose step is running is not idle, however long the step takes.
    reply = step(server, busy, type="execute", content="import time; time.sleep(3.5); print('slept')")
    assert "slept" in reply["step"]["observation"]
    assert server.client.get(f"/v1/sessions/{busy}").status_code == 200
    response = server.client.get(f"/v1/sessions/{sid}")
    assert response.status_code == 410
    assert "closed after 2 s without an action" in response.json()["detail"]
    # Reading a session is not an action: read again and again without actions, and it goes too.
    assert wait_for(lambda: server.client.get(f"/v1/sessions/{busy}").status_code == 410, timeout=15)
    assert wait_for(lambda: list(tmp_sandbox_root.iterdir()) == []), "a reaped session left its sandbox"


@pytest.mark.slow
def test_two_sessions_run_at_once_and_steps_of_one_session_take_turns(
    start_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    server = start_server(cell_timeout=30, sandbox={"backend": "local"})  # the flag file crosses sessions
    a = new_session(server, query="a")["session_id"]
    b = new_session(server, query="b")["session_id"]
    flag = tmp_path / "flag"
    wait_for_flag = f"import os, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.05)\nprint('flag seen')"
    with ThreadPoolExecutor(2) as pool:
        waiting = pool.submit(step, server, a, type="execute", content=wait_for_flag)
        time.sleep(0.5)
        # If sessions were served one at a time, this would wait behind a's cell until its timeout.
        step(server, b, type="execute", content=f"open({str(flag)!r}, 'w').close()\nx = 1")
        assert waiting.result()["step"]["outcome"] == "ok"
        assert "flag seen" in waiting.result()["step"]["observation"]

        # Each session has its own kernel.
        assert "NameError" in step(server, a, type="execute", content="print(x)")["step"]["observation"]

        # Two steps sent to one session at once run one after the other: the second neither
        # interrupts the first nor fails because a cell is running.
        first = pool.submit(step, server, b, type="execute", content="import time; time.sleep(1); print('first', x)")
        time.sleep(0.3)
        second = step(server, b, type="execute", content="print('second')")
        assert first.result()["step"]["outcome"] == "ok" and "first 1" in first.result()["step"]["observation"]
        assert second["step"]["outcome"] == "ok" and second["step"]["observation"] == "second\n"
    indices = [s["index"] for s in server.client.get(f"/v1/sessions/{b}").json()["trajectory"]["steps"]]
    assert indices == [0, 1, 2]


@pytest.mark.slow
def test_soft_timeouts_over_http(start_server: Callable[..., LiveServer]) -> None:
    server = start_server(cell_timeout=1)
    sid = new_session(server, query="x")["session_id"]
    reply = step(server, sid, type="execute", content="import time\nprint('start', flush=True)\ntime.sleep(30)")
    assert reply["step"]["outcome"] == "timeout" and "still running" in reply["step"]["observation"]
    reply = step(server, sid, type="interrupt")
    assert reply["step"]["outcome"] == "interrupted" and "KeyboardInterrupt" in reply["step"]["observation"]


def test_a_budget_that_runs_out_truncates_the_episode_over_http(tmp_sandbox_root: Path) -> None:
    server = LiveServer(SessionManager(EnvConfig(max_steps=2, sandbox=SandboxConfig(root=tmp_sandbox_root))))
    try:
        sid = new_session(server, query="x")["session_id"]
        first = step(server, sid, type="execute", content="1")
        assert (first["done"], first["terminated"], first["truncated"], first["stop_reason"]) == (
            False,
            False,
            False,
            None,
        )
        last = step(server, sid, type="continue_wait")  # an invalid step counts too
        assert (last["done"], last["terminated"], last["truncated"], last["stop_reason"]) == (
            True,
            False,
            True,
            "max_steps",
        )
        assert (last["step"]["truncated"], last["step"]["stop_reason"]) == (True, "max_steps")
    finally:
        server.stop()


@pytest.mark.slow
def test_deleting_a_session_cuts_its_step_short(server: LiveServer, tmp_sandbox_root: Path) -> None:
    sid = new_session(server, query="x")["session_id"]
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(
            server.client.post, f"/v1/sessions/{sid}/step", json={"type": "execute", "content": "!sleep 100"}
        )
        time.sleep(1)
        final = server.client.delete(f"/v1/sessions/{sid}").json()
        assert final["done"] and final["stop_reason"] == "cancelled"
        response = in_flight.result(timeout=60)
    assert response.status_code == 410 and "closed" in response.json()["detail"]
    assert list(tmp_sandbox_root.iterdir()) == []


@pytest.mark.slow
def test_stopping_the_server_stops_every_sandbox(
    start_server: Callable[..., LiveServer], tmp_sandbox_root: Path
) -> None:
    server = start_server(cell_timeout=120)
    new_session(server, query="idle")
    busy = new_session(server, query="busy")["session_id"]
    assert len(list(tmp_sandbox_root.iterdir())) == 2
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(
            server.client.post, f"/v1/sessions/{busy}/step", json={"type": "execute", "content": "!sleep 100"}
        )
        time.sleep(1)
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 60  # the step in flight is cut short, not waited for
        answer = in_flight.result()
        assert answer.status_code == 410 and "the server stopped" in answer.json()["detail"], answer.text
    assert list(tmp_sandbox_root.iterdir()) == []


@contextlib.contextmanager
def serving(cwd: Path, env: dict[str, str], *options: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`super-bench serve` on a port the OS picks, and its URL (from its banner); Ctrl-C ends it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "super_bench", "serve", "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert banner.startswith("super-bench environment server on http://127.0.0.1:"), banner
        yield process, banner.split()[4]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)


@pytest.mark.slow
def test_serve_command(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SUPER_BENCH_TOKEN"}
    for given in (None, "s3cret"):
        if given:
            env["SUPER_BENCH_TOKEN"] = given
        with serving(tmp_path, env, "--max-sessions", "2") as (process, url):
            assert process.stdout is not None
            token_line = process.stdout.readline().strip()
            if given is None:
                token = token_line.removeprefix("token: ")
                assert len(token) >= 24
            else:
                token = given
                assert "as given" in token_line and token not in token_line
            deadline = time.monotonic() + 30
            while True:
                try:
                    response = httpx.get(url + "/v1/sessions", headers={"Authorization": f"Bearer {token}"})
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            assert response.status_code == 200 and response.json() == []
            assert httpx.get(url + "/v1/sessions").status_code == 401
        assert process.returncode == 0


def test_serve_warns_about_other_addresses_and_needs_a_free_port() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        result = subprocess.run(
            [sys.executable, "-m", "super_bench", "serve", "--port", port], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_serve_without_the_server_extra_says_what_to_install() -> None:
    code = "import sys; sys.modules['fastapi'] = None; from super_bench.cli import main; main(['serve'])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "pip install 'super-bench[server]'" in result.stderr and "fastapi" in result.stderr


def test_the_documented_curl_recipe_runs_as_written(tmp_path: Path) -> None:
    """docs/integrations.md's shell block, run by bash against `super-bench serve` (only its port is this test's)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    (recipe,) = [block for block in re.findall(r"```bash\n(.*?)```", doc, re.DOTALL) if "curl" in block]
    env = {**os.environ, "SUPER_BENCH_TOKEN": "recipe-token", "TMPDIR": str(tmp_path)}
    with serving(tmp_path, env) as (_, url):
        script = recipe.replace("http://127.0.0.1:8765", url)
        result = subprocess.run(
            ["bash", "-c", "set -e\n" + script], capture_output=True, text=True, env=env, timeout=300
        )
    assert result.returncode == 0, result.stderr
    observation, done, metrics = result.stdout.split("\n", 2)
    assert "Cloning into 'tinyreg'" in observation
    assert done == "true"
    assert json.loads(metrics)["output_match"] == 1.0


def test_a_body_not_labelled_json_is_told_how_to_send_it(server: LiveServer) -> None:
    response = server.client.post(
        "/v1/sessions", content=b'{"task_id": "tinyreg"}', headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["detail"] and "curl" in response.json()["detail"]
    # An empty body is a missing body, not a wrong label; invalid JSON labelled JSON stays a 400.
    assert server.client.post("/v1/sessions").status_code == 422
    bad = server.client.post("/v1/sessions", content=b"{", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400

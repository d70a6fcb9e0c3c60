"""Agent code attacks the isolating sandboxes (bwrap, and docker where an engine and image exist). Each
attack is contained, the episode goes on, other tasks and the harness are unaffected, and the sandbox
leaves nothing behind. A few attacks concern what only bwrap shows (the host's own system, read-only)
and are marked so."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings, token

from super_bench import Action, Environment
from super_bench._paths import cache_dir
from super_bench.sandbox.conformance import pids_with, wait_for
from super_bench.sandbox.lifetime.reaper import processes_with_marker
from super_bench.sandbox.limits.memory import cgroup_parent


@pytest.fixture(params=["bwrap", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def bwrap_only(backend: str) -> None:
    """The attack concerns bwrap's view of the host's own system (a container has a system of its own)."""
    if backend != "bwrap":
        pytest.skip("bwrap shows the host's own system; a container shows its image's")


@pytest.fixture
def start(env_factory: Any, backend: str) -> Any:
    settings = backend_settings(backend)

    def started(**sandbox: Any) -> Environment:
        env: Environment = env_factory(cell_timeout=60, sandbox={**settings, **sandbox})
        env.reset(make_task())
        return env

    return started


def run(env: Environment, code: str) -> str:
    return env.step(Action.execute(code)).observation


def close_and_check(env: Environment) -> None:
    """The episode can go on after the attack; then closing leaves no process and no file behind."""
    assert run(env, "print('still working')").endswith("still working\n")
    sandbox = env._sandbox
    root, runtime, marker = sandbox.root, sandbox.runtime_dir, sandbox.id
    env.close()
    assert not root.exists() and not runtime.exists()
    assert wait_for(lambda: not processes_with_marker(marker), timeout=5), "a process of the task outlived it"


def test_api_keys_of_the_harness_are_out_of_reach(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-adversarial-1",
        "ANTHROPIC_API_KEY": "sk-ant-adversarial-2",
        "HF_TOKEN": "hf_adversarial3",
        "AWS_SECRET_ACCESS_KEY": "adversarial4",
        "PIP_INDEX_URL": "https://user:adversarial5@pypi.example/simple",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    env = start()
    seen = run(
        env,
        "import glob, os\n"
        "print(dict(os.environ))\n"
        "for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):\n"
        "    try:\n"
        "        print(open(path, 'rb').read())\n"
        "    except OSError as e:\n"
        "        print(path, e)\n"
        f"print(open('/proc/{os.getpid()}/environ', 'rb').read() if os.path.exists('/proc/{os.getpid()}') else '')\n"
        "!env; cat /proc/1/environ",
    )
    assert "SUPER_BENCH_SANDBOX" in seen  # the search did read the environment
    for value in secrets.values():
        assert value not in seen
    close_and_check(env)


def test_the_users_home_is_invisible(bwrap_only: None, start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Any directory can be a home: this one holds world-readable files under an allowed directory, yet must not be seen.
    home = Path("/usr/share/doc")
    if not home.is_dir() or not any(home.iterdir()):
        pytest.skip("needs /usr/share/doc")
    # The harness keeps its own cache where it was (it is found through HOME otherwise, and a home that is not
    # the harness's own need not be writable: an ordinary user cannot write /usr/share/doc).
    monkeypatch.setenv("SUPER_BENCH_ENV_CACHE", str(cache_dir()))
    monkeypatch.setenv("HOME", str(home))
    inside_home = sorted(p.name for p in home.iterdir())[0]
    env = start()
    seen = run(
        env,
        f"import os\nprint(os.listdir('{home}'), [os.path.exists(p) for p in ('/home', '/mnt', '/media', '/srv')])\n"
        f"print(os.path.exists('{home}/{inside_home}'), os.path.exists('/etc/os-release'))",
    )
    assert seen == "[] [False, False, False, False]\nFalse True\n"
    close_and_check(env)


def test_only_an_allowlist_of_host_paths_is_visible(bwrap_only: None, start: Any) -> None:
    env = start()
    seen = run(env, "import json, os\nprint(json.dumps(sorted(os.listdir('/'))))")
    shown = set(json.loads(seen))
    system = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "sys", "proc", "dev"}
    own = {"content", "root", "tmp", "venv", "run", "opt"}  # the task's own, the kernel's sockets, shared packages
    interpreter = {path.split("/")[1] for path in env._sandbox.base.paths}  # type: ignore[attr-defined]
    assert shown <= system | own | interpreter, shown - system - own - interpreter
    assert "super-bench" in run(env, "import os\nprint(os.listdir('/opt'))")


@pytest.mark.slow
def test_the_harness_its_checkout_and_its_task_files_are_invisible(start: Any) -> None:
    import super_bench
    from super_bench import demo

    checkout = Path(super_bench.__file__).resolve().parents[1]
    env = start()
    probes = [str(checkout), str(demo.TASKS), sys.prefix, os.getcwd(), str(Path(super_bench.__file__).parent)]
    seen = run(env, f"import os\nprint([os.path.exists(p) and os.listdir(p) for p in {probes!r}])")
    assert seen == f"{[False] * len(probes)}\n"
    # No task file with gold answers anywhere on the file system.
    seen = run(env, "!find / \\( -path /proc -o -path /sys \\) -prune -o -name '*.jsonl' -print 2>/dev/null | head")
    assert seen == ""
    assert "No module named 'super_bench'" in run(env, "import super_bench")
    close_and_check(env)


@pytest.mark.slow
def test_writes_outside_the_task_go_nowhere(start: Any, backend: str, tmp_path: Path) -> None:
    env = start()
    outside = tmp_path / "outside.txt"
    seen = run(
        env,
        "import os\n"
        "for path in ['/usr/local/planted', '/etc/planted', '/planted', '/venv/../planted']:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as e:\n"
        "        print('refused', path, e.strerror)\n"
        f"os.makedirs('{tmp_path}', exist_ok=True)\n"
        f"open('{outside}', 'w').write('x')\n",
    )
    if backend == "bwrap":  # the host's system is read-only there; a container's root writes its own layer
        assert "wrote" not in seen and seen.count("refused") == 4
    assert not outside.exists()  # it went to the task's own /tmp, not to the host path
    assert not Path("/planted").exists() and not Path("/usr/local/planted").exists()
    close_and_check(env)


@pytest.mark.slow
def test_the_edit_action_does_not_follow_symlinks_out_of_the_sandbox(start: Any, tmp_path: Path) -> None:
    victim = tmp_path / "victim.py"
    victim.write_text("x = 1\n")
    env = start()
    run(env, f"import os\nos.symlink('{victim}', 'link.py')")
    step = env.step(Action(type="edit", content="link.py\n<<<BEFORE_EDIT>>>\nx = 1\n<<<AFTER_EDIT>>>\nx = 2\n"))
    assert step.outcome == "invalid" and "does not exist" in step.observation
    assert victim.read_text() == "x = 1\n"
    close_and_check(env)


@pytest.mark.slow
def test_other_tasks_directories_are_out_of_reach(start: Any) -> None:
    other, env = start(), start()
    other._sandbox.write_file("result.txt", b"mine\n")
    target = other._sandbox.root / "content" / "result.txt"
    seen = run(
        env,
        f"import os\nprint(os.path.exists('{target}'), os.path.exists('{target.parent.parent}'))\n"
        f"os.makedirs('{target.parent}', exist_ok=True)\n_ = open('{target}', 'w').write('overwritten')",
    )
    assert seen == "False False\n"
    assert target.read_text() == "mine\n"
    assert other._sandbox.read_file("result.txt") == b"mine\n"
    close_and_check(env)
    close_and_check(other)


FORK_SLEEPERS = """
import os, time
forked = 0
try:
    for _ in range(300):
        if os.fork() == 0:
            time.sleep(10)
            os._exit(0)
        forked += 1
except OSError as e:
    print('refused:', e.strerror)
print('forked', forked)
"""


@pytest.mark.slow
def test_a_fork_bomb_hits_the_process_limit(start: Any) -> None:
    env = start(max_processes=64)
    seen = run(env, FORK_SLEEPERS)
    assert "refused: Resource temporarily unavailable" in seen
    assert int(seen.split("forked")[1]) < 64
    # Another task is not affected, and neither is the harness.
    other = start(max_processes=64)
    assert "forked 30" in run(other, FORK_SLEEPERS.replace("300", "30"))
    assert subprocess.run(["true"]).returncode == 0
    close_and_check(other)
    # Threads count too: until its children exit, the kernel itself cannot start one, and cells
    # fail with a clear error (the episode goes on); then it works again.
    deadline = time.monotonic() + 30
    while "still working" not in run(env, "print('still working')") and time.monotonic() < deadline:
        time.sleep(1)
    close_and_check(env)


@pytest.mark.slow
def test_daemons_die_with_their_kernel(bwrap_only: None, start: Any) -> None:
    env = start()
    mark = token()
    run(env, f"import os\nos.system('setsid nohup sleep {mark} > /dev/null 2>&1 &')")
    assert wait_for(lambda: pids_with(mark))
    (pid,) = pids_with(mark)
    step = env.step(Action.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"))
    assert step.outcome == "kernel_died"
    assert wait_for(lambda: pid not in pids_with(mark), timeout=5)
    close_and_check(env)


@pytest.mark.slow
def test_memory_bombs_are_contained(start: Any) -> None:
    # 1 GiB: room for the kernel under an address-space limit too (an ordinary user's), none for 2 GiB bombs.
    env = start(memory_limit="1g")
    assert "MemoryError" in run(env, "x = bytearray(2 * 2**30)")
    seen = run(env, "!python -c 'x = b\" \" * 2**31' 2>&1 | tail -1")
    assert "MemoryError" in seen
    seen = run(env, "!dd if=/dev/zero of=/dev/shm/fill bs=1M count=1024")
    assert "No space left on device" in seen  # /dev/shm is memory too, and capped
    close_and_check(env)


SHARED_MAPPINGS = {
    "anonymous": "import mmap\nm = mmap.mmap(-1, SIZE)",
    "memfd": "import mmap, os\nfd = os.memfd_create('fill')\nos.ftruncate(fd, SIZE)\nm = mmap.mmap(fd, SIZE)",
}
TOUCH = "\nfor i in range(0, SIZE, 4096):\n    m[i] = 1\nprint('surv' + 'ived')"


@pytest.mark.slow
@pytest.mark.parametrize("enforcement", ["cgroup", "address-space"])
@pytest.mark.parametrize("mapping", sorted(SHARED_MAPPINGS))
def test_shared_memory_counts_against_the_memory_limit(
    start: Any, backend: str, enforcement: str, mapping: str
) -> None:
    """RLIMIT_DATA does not count shared mappings; a 3 GiB one under a 1 GiB limit must fail all the same."""
    if backend == "docker" and enforcement != "cgroup":
        pytest.skip("a container's memory limit is its cgroup")
    if backend == "bwrap" and enforcement == "cgroup" and cgroup_parent() is None:
        pytest.skip("no memory cgroup can be made here")
    env = start(memory_limit="1g", memory_enforcement=enforcement)
    step = env.step(
        Action.execute(SHARED_MAPPINGS[mapping].replace("SIZE", str(3 * 2**30)) + TOUCH.replace("SIZE", str(3 * 2**30)))
    )
    assert "survived" not in step.observation
    if enforcement == "cgroup":  # the kernel of the system ends the task's process, and the note says why
        assert step.outcome == "kernel_died" and "out of memory" in step.observation
    else:  # the mapping itself is refused
        assert step.outcome == "error" and (
            "Cannot allocate memory" in step.observation or "MemoryError" in step.observation
        )
    close_and_check(env)


@pytest.mark.slow
def test_numpy_works_under_an_address_space_limit(bwrap_only: None, start: Any) -> None:
    env = start(memory_limit="1g", memory_enforcement="address-space")
    seen = run(env, "import numpy\nprint(int(numpy.ones((1000, 1000)).sum()))")
    assert seen == "1000000\n"
    seen = run(
        env,
        "try:\n    import torch\nexcept ImportError:\n    print('no torch here')\nelse:\n    print(int(torch.ones(10).sum()))",
    )
    assert seen in ("no torch here\n", "10\n")
    close_and_check(env)


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on the host's loopback that records who connected."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(peer[0])
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=5)
    server.close()


CONNECT = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('connected')\nexcept OSError as e:\n    print('unreachable', e)"


@pytest.mark.slow
@pytest.mark.parametrize("network", [False, True])
def test_the_hosts_loopback_is_unreachable_with_the_network_off(
    start: Any, backend: str, loopback_server: tuple[int, list[str]], network: bool
) -> None:
    port, accepted = loopback_server
    if network and backend == "docker":
        pytest.skip("a container's network, when on, is the engine's bridge, not the host's loopback")
    env = start(network=network)
    seen = run(env, CONNECT.format(port=port))
    if network:  # the control: with the network on, the same code does reach the host
        deadline = time.monotonic() + 10  # (the server's thread takes the connection from its queue in its time)
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen.startswith("connected") and accepted
    else:
        assert seen.startswith("unreachable") and not accepted
    close_and_check(env)

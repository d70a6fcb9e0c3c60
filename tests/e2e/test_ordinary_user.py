"""The privilege rule with the harness run as an ordinary user (docs/threat-model.md, "Host files and privileges"):
bubblewrap then builds the sandbox in a user namespace of its own, with no root anywhere. A real `super-bench
run` of a scripted agent, as that user: agent code plants programs named like every helper in each PATH folder
and each folder of its environment, the kernel dies and is restarted, edits are made; whatever planted program
ran must have run as agent code with no capabilities, nothing planted runs on the host, and the limits hold after
every restart. And a stopped watcher does not stop the wall clock, `verify` of a crafted run directory runs
nothing on the host, and the sandbox's, run directories' and package proxy's adversarial modules pass as that user.

As root, the tests make an ordinary user of their own (``useradd``), and run the harness as it from an
interpreter that user can execute; they skip, saying why, where that cannot be done. As an ordinary user
already, they run the harness as this user."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tests.support.hostile_runs import make_hostile, recorded_run
from tests.support.planted import CAPABILITIES, HELPERS, LIMITS, PLANT, STOP_WATCHERS, limit_of, processes
from tests.support.sandboxes import backend_settings

USER = "super-bench-test"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
ZERO = "0000000000000000"


@dataclass(frozen=True)
class OrdinaryUser:
    """Runs the harness as an ordinary user: ``prefix`` switches to it (empty when this process is one),
    ``python`` is an interpreter it can execute with super-bench importable, ``work`` a folder it owns."""

    prefix: list[str]
    python: str
    work: Path
    owner: tuple[int, int] | None  # the user's ids, where files made here must be given to it

    def give(self, path: Path) -> None:
        if self.owner is not None:
            os.chown(path, *self.owner)

    def run(
        self, *args: str, timeout: float = 600, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        environ = {"PATH": SYSTEM_PATH, "HOME": str(self.work / "home"), "TMPDIR": str(self.work / "tmp")}
        environ |= {"LANG": "C.UTF-8", "COLUMNS": "200", **(env or {})}
        return subprocess.run(
            [*self.prefix, self.python, *args],
            env=environ,
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _account() -> tuple[int, int]:
    """The user and group of the ordinary user, made here where it does not exist yet."""
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        useradd = shutil.which("useradd", path="/usr/sbin:/sbin:/usr/bin:/bin")
        if useradd is None:
            pytest.skip("running as root, and there is no useradd to make an ordinary user to run the harness as")
        made = subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            capture_output=True,
            text=True,
        )
        try:
            entry = pwd.getpwnam(USER)  # made here, or by a test running alongside
        except KeyError:
            pytest.skip(f"running as root, and cannot make the ordinary user {USER}: {made.stderr.strip()}")
    return entry.pw_uid, entry.pw_gid


def _interpreter(prefix: list[str], work: Path) -> str:
    """An interpreter the user can execute that imports this super-bench: ours, else a system Python of the same
    version (ours may lie in a folder only root may enter) with our site-packages added, in a venv of its own."""

    def imports(python: str) -> bool:
        # Through a shell, as the harness starts its own interpreter again: setpriv looks its program up while it
        # still holds root's capabilities, so a program it starts directly may lie where the user cannot go.
        probe = [*prefix, "/bin/sh", "-c", '"$0" -c "import super_bench.cli"', python]
        return subprocess.run(probe, capture_output=True, cwd=work, env={"PATH": SYSTEM_PATH}).returncode == 0

    if imports(sys.executable):
        return sys.executable
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    system = shutil.which(version, path=SYSTEM_PATH)
    if system is None:
        pytest.skip(f"the ordinary user cannot execute {sys.executable}, and there is no system {version}")
    venv = work / "venv"
    subprocess.run([*prefix, system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = Path(subprocess.check_output([venv / "bin" / "python", "-c", purelib], text=True).strip())
    (site_packages / "harness.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in sorted(ours)))
    python = str(venv / "bin" / "python")
    if not imports(python):
        pytest.skip(f"the ordinary user cannot import super-bench with {system} (nor execute {sys.executable})")
    return python


@pytest.fixture(scope="module")  # one home for the module: a new user's first run builds its kernel environment
def ordinary_user() -> Iterator[OrdinaryUser]:
    backend_settings("bwrap")  # skips, saying why, where bubblewrap cannot run here at all
    work = Path(tempfile.mkdtemp(prefix="super-bench-user-"))
    try:
        for name in ("home", "tmp"):
            (work / name).mkdir()
        prefix: list[str] = []
        owner = None
        if os.geteuid() == 0:
            owner = uid, gid = _account()
            setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
            if setpriv is None:
                pytest.skip("running as root, and there is no setpriv to run the harness as an ordinary user")
            prefix = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
            for d, _, files in os.walk(work):
                for path in [d, *(os.path.join(d, f) for f in files)]:
                    os.chown(path, uid, gid)
            work.chmod(0o700)
            probe = subprocess.run([*prefix, "/bin/sh", "-c", f"test -w {work}"], capture_output=True)
            if probe.returncode != 0:
                pytest.skip(f"the ordinary user {USER} cannot reach {work} (a folder above it is closed to it)")
        yield OrdinaryUser(prefix, _interpreter(prefix, work), work, owner)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    user: OrdinaryUser, name: str, actions: list[dict[str, Any]], *options: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``super-bench run`` of the replay agent on the demo task tinyreg in bwrap, as the user: its result row and
    its agent's steps."""
    replay = user.work / f"{name}.json"
    replay.write_text(json.dumps(actions))
    user.give(replay)
    out = user.work / name
    args = ["--agent", f"replay:{replay}", "--task-ids", "tinyreg", "--sandbox", "bwrap", "--out", str(out)]
    proc = user.run("-m", "super_bench", "run", *args, "--cell-timeout", "60", *options)
    assert (out / "results.jsonl").exists(), proc.stderr
    row = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert row["status"] == "completed", f"{row}\n{proc.stderr}"
    trajectory = json.loads((out / row["trajectory"]).read_text())
    return row, [step for step in trajectory["steps"] if not step["pre_executed"]]


@pytest.mark.slow
def test_planted_helpers_never_run_with_more_privilege_than_agent_code_as_an_ordinary_user(
    ordinary_user: OrdinaryUser,
) -> None:
    host_log = Path("/tmp/planted.log")  # where a planted program run on the host would write its line
    before = host_log.stat().st_mtime_ns if host_log.exists() else None
    actions: list[dict[str, Any]] = [
        {"type": "execute", "content": PLANT.format(helpers=HELPERS, task_root="")},
        {"type": "execute", "content": "import os\nprint('AGENT', os.getuid(), os.environ['TMPDIR'])"},
        {"type": "execute", "content": "open('notes.txt', 'w').write('a = 1\\n')"},
    ]
    for round_ in range(3):
        edit = f"notes.txt\n<<<BEFORE_EDIT>>>\na = {round_ + 1}\n<<<AFTER_EDIT>>>\na = {round_ + 2}\n"
        actions += [
            {"type": "execute", "content": "import os\nos._exit(3)"},  # the kernel dies; the next step restarts it
            {"type": "edit", "content": edit},
            {"type": "execute", "content": LIMITS},
        ]
    actions += [
        {"type": "execute", "content": CAPABILITIES},
        {"type": "execute", "content": "print(open('notes.txt').read())"},
        {
            "type": "execute",
            "content": "import os\nlog = os.path.join(os.environ['TMPDIR'], 'planted.log')\n"
            "print(open(log).read() if os.path.exists(log) else 'NOTHING RAN')",
        },
    ]
    limits = ["--max-file-size", "8m", "--memory-limit", "1g", "--memory-enforcement", "address-space"]
    _, steps = _run(ordinary_user, "planted", actions, *limits, "--max-processes", "64")
    seen = [step["observation"] for step in steps]
    assert "/venv/bin" in seen[0], seen[0]  # the PATH's first folder, which agent code owns, was planted in
    _, agent, tmpdir = next(line for line in seen[1].splitlines() if line.startswith("AGENT")).split()
    for round_ in range(3):
        died, edited, after = steps[3 + 3 * round_ : 6 + 3 * round_]
        assert died["outcome"] == "kernel_died", died["observation"]
        assert edited["outcome"] == "ok", edited["observation"]
        assert limit_of(after["observation"], "Max file size") == str(8 << 20)
        assert limit_of(after["observation"], "Max data size") == str(1 << 30)
        assert limit_of(after["observation"], "Max address space") == str(1 << 30)
        assert limit_of(after["observation"], "Max processes") == "64"
    procs = processes(seen[-3])
    assert len(procs) >= 2 and "NoNewPrivs:\t1" in seen[-3], seen[-3]
    for pid, uid, prm, eff, bnd, amb in procs:
        assert prm == eff == amb == ZERO, (pid, uid)
        assert pid == "1" or bnd == ZERO, (pid, uid)
    assert "a = 4" in seen[-2]
    for line in seen[-1].splitlines():
        if line.startswith("RAN "):
            _, _name, uid, *caps = line.split()
            assert uid == agent and all(cap.endswith(":" + ZERO) for cap in caps), line
    assert tmpdir == str(host_log.parent)
    after_run = host_log.stat().st_mtime_ns if host_log.exists() else None
    assert after_run == before, "a planted program ran on the host"


@pytest.mark.slow
def test_a_stopped_watcher_does_not_stop_the_wall_clock_as_an_ordinary_user(ordinary_user: OrdinaryUser) -> None:
    actions = [
        {"type": "execute", "content": "import os\nos._exit(3)"},  # the limit holds for kernels started later too
        {"type": "execute", "content": STOP_WATCHERS},
    ]
    row, steps = _run(ordinary_user, "stopped", actions, "--wall-time-limit", "10")
    stopped = steps[-1]
    assert stopped["outcome"] == "kernel_died" and "wall-time limit" in stopped["observation"], stopped
    assert row["stop_reason"] == "max_wall_time", row
    # The cell sleeps 60 s with every process it could reach stopped: it ends at the task's 10 s limit instead.
    took = datetime.fromisoformat(stopped["end_time"]) - datetime.fromisoformat(stopped["start_time"])
    assert took.total_seconds() < 15, f"the cell ran {took.total_seconds():.1f} s under a 10 s wall-time limit"


@pytest.mark.slow
def test_verify_of_a_crafted_run_runs_nothing_on_the_host_as_an_ordinary_user(ordinary_user: OrdinaryUser) -> None:
    crafted = ordinary_user.work / "crafted"
    crafted.mkdir()
    marker = ordinary_user.work / "host-marker"  # where the user could write, were the run's code run on the host
    actions = [{"type": "execute", "content": f"!id > {marker}"}, {"type": "submit", "content": {"uid": 0}}]
    out = recorded_run(crafted, actions)
    marker.unlink()  # the original run was local: its action did run on its host
    make_hostile(out, marker)
    for d, _, files in os.walk(crafted):
        for path in [d, *(os.path.join(d, f) for f in files)]:
            ordinary_user.give(Path(path))
    result = ordinary_user.run("-m", "super_bench", "verify", str(out))
    assert not marker.exists() and not Path(f"{marker}.probed").exists(), "the run's code ran on the host"
    assert "replays run in: bwrap, network off" in result.stderr, result.stderr
    assert "refused from run.json: backend = " in result.stderr, result.stderr
    summary = json.loads((out / "verify-summary.json").read_text())
    assert summary["infra_errors"] == 0, summary  # the replay did run, in the sandbox


@pytest.mark.slow
@pytest.mark.parametrize(
    "module",
    [
        # The sandbox: host paths allowlisted, the harness's files and credentials out of reach, writes outside
        # the task going nowhere, fork and memory bombs, other tasks' directories.
        "sandbox/test_bwrap_security.py",
        # Crafted run directories read by verify, score and view.
        "runner/test_hostile_run_dirs.py",
        # The package proxy, which runs in the harness's process with the harness's user and files.
        "sandbox/test_package_proxy_attacks.py",
    ],
)
def test_the_adversarial_tests_pass_as_an_ordinary_user(ordinary_user: OrdinaryUser, module: str) -> None:
    # Each module run again by pytest in a process of the user's own, with this checkout's tests.
    checkout = Path(__file__).resolve().parents[2]
    args = [
        "-m",
        "pytest",
        str(checkout / "tests" / module),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(checkout),
    ]
    basetemp = ordinary_user.work / f"pytest-{Path(module).stem}"
    proc = ordinary_user.run(*args, "--basetemp", str(basetemp), env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout, proc.stdout[-2000:]

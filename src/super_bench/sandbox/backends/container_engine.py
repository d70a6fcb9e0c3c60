"""The container engine of the docker sandbox, found and configured as it works on this host.

Docker is used as its daemon is configured. Podman runs containers itself, through an OCI runtime
(crun or runc) and a cgroup manager (systemd or cgroupfs), and gives each container resource limits
(``nofile``, ``nproc``) that some hosts do not let it set: crun fails to raise RLIMIT_NOFILE where root
lacks CAP_SYS_RESOURCE, systemd is not running in most containers. So the settings are found by
trying: a container of the image about to be used is started with the engine's defaults, then with
each other runtime, cgroup manager and explicit limits (the harness's own, which any process may keep),
until one runs. What was found is shown by ``super-bench sandbox check`` and recorded in each run's
manifest.
"""

from __future__ import annotations

import functools
import itertools
import resource
import shutil
import subprocess

from pydantic import ConfigDict, Field

from super_bench._pydantic import Model
from super_bench.errors import SandboxError

_INSTALL = "install Docker (https://docs.docker.com/engine/install/) or Podman (apt-get install podman)"
_PROBE_TIMEOUT = 120


class Engine(Model):
    """A container engine and the settings it runs containers with here."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="docker or podman")
    executable: str = Field(description="The engine's command, by absolute path")
    version: str = ""
    global_args: tuple[str, ...] = Field((), description="Options before every subcommand (podman's runtime, cgroups)")
    run_args: tuple[str, ...] = Field((), description="Options of every container started (explicit ulimits)")
    probed_with: str | None = Field(None, description="The image the settings were found with (None: not tried)")

    @property
    def command(self) -> list[str]:
        """The argv prefix of every engine command."""
        return [self.executable, *self.global_args]

    def describe(self) -> str:
        settings = " ".join([*self.global_args, *self.run_args]) or "its defaults"
        tried = f"tried with {self.probed_with}" if self.probed_with else "not tried yet: no image here to try with"
        return f"{self.name} {self.version} ({self.executable}) with {settings} ({tried})"


def find_engine(preferred: str | None = None, image: str | None = None) -> Engine:
    """The container engine (``docker`` first, then ``podman``) with the settings it needs here, found by
    starting a container of ``image`` (where that image exists; otherwise the engine's defaults, untried).

    Raises ``SandboxError`` with one line that says what to install or start.
    """
    engine = _answering_engine(preferred)
    if image is None or not image_exists(engine, image):
        return engine
    return _settings(engine, image)


def image_exists(engine: Engine, image: str) -> bool:
    return subprocess.run([*engine.command, "image", "inspect", image], capture_output=True).returncode == 0


@functools.cache
def _answering_engine(preferred: str | None) -> Engine:
    problems = []
    for name in [preferred] if preferred else ["docker", "podman"]:
        exe = shutil.which(name)
        if exe is None:
            problems.append(f"{name} is not installed")
            continue
        try:
            proc = subprocess.run(
                [exe, "version", "--format", "{{.Client.Version}}"], capture_output=True, text=True, timeout=60
            )
            info = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            problems.append(f"{name} does not answer ({e})")
            continue
        if info.returncode == 0:
            return Engine(name=name, executable=exe, version=proc.stdout.strip())
        lines = [line.strip() for line in info.stderr.splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {info.returncode}"
        problems.append(
            f"the {name} engine is not running ({detail})" if name == "docker" else f"{name} fails ({detail})"
        )
    if any("not running" in p for p in problems):
        hint = "start Docker (sudo systemctl start docker, or open Docker Desktop), or use Podman"
    else:
        hint = _INSTALL
    raise SandboxError(f"no container engine for the docker sandbox: {'; '.join(problems)}: {hint}")


@functools.cache
def _settings(engine: Engine, image: str) -> Engine:
    """The first of the candidate settings with which a container of ``image`` runs ``true``."""
    failures = []
    for global_args, run_args in _candidates(engine):
        command = [engine.executable, *global_args, "run", "--rm", "--network", "none", *run_args, image, "true"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=_PROBE_TIMEOUT)
        except (OSError, subprocess.SubprocessError) as e:
            failures.append(str(e))
            continue
        if proc.returncode == 0:
            return engine.model_copy(
                update={"global_args": tuple(global_args), "run_args": tuple(run_args), "probed_with": image}
            )
        lines = [line.strip() for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        failures.append(lines[-1] if lines else f"exit status {proc.returncode}")
    raise SandboxError(
        f"{engine.name} cannot start a container of {image} here with any settings tried "
        f"(runtimes, cgroup managers, explicit ulimits); the last error: {failures[-1] if failures else '?'}"
    )


def _candidates(engine: Engine) -> list[tuple[list[str], list[str]]]:
    """Settings to try, the engine's defaults first. Docker's are its daemon's to configure."""
    if engine.name != "podman":
        return [([], [])]
    runtimes: list[list[str]] = [[]]
    runtimes += [["--runtime", path] for name in ("crun", "runc") if (path := shutil.which(name))]
    managers: list[list[str]] = [[], ["--cgroup-manager", "cgroupfs"]]
    ulimits: list[list[str]] = [[], _explicit_ulimits(None), _explicit_ulimits(1024)]
    combinations = itertools.product(runtimes, managers, ulimits)
    return [([*runtime, *manager], limits) for runtime, manager, limits in combinations]


def _explicit_ulimits(cap: int | None) -> list[str]:
    """The harness's own open-file and process limits as explicit ulimits (values it may keep), or at most
    ``cap``: the runtime's own process can have lower limits than the harness. RLIMIT_NPROC binds no
    container root of the host's (the kernel exempts it); the pids cgroup (``--pids-limit``) limits tasks."""
    args = []
    for name, which in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = resource.getrlimit(which)
        if cap is not None:
            soft, hard = min(soft, cap) if soft >= 0 else cap, min(hard, cap) if hard >= 0 else cap
        args += ["--ulimit", f"{name}={soft}:{hard}"]
    return args

"""What the backends of this package share: the environment agent code gets (``scrubbed_environ``: never the
harness's credentials or configuration; ``passed_environ``: what the user passes on purpose), the per-process
limits (``prlimit``, the system's, by its absolute path: ``lifetime.programs``), a task directory, a kernel
run as a host child process and the wait for its sockets, and a file operation's failure as an ``OSError``.
Private to ``sandbox/`` (the backends, and ``supply``'s pip environment): plug-ins subclass ``ProcessSandbox``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from super_bench.errors import KernelError
from super_bench.sandbox.base import KernelLaunch, KernelProcess
from super_bench.sandbox.config import SandboxConfig
from super_bench.sandbox.launch.runtime_dir import KernelFiles, KernelRuntime
from super_bench.sandbox.lifetime import supervisor
from super_bench.sandbox.lifetime.programs import program

# Environment variables that look like credentials never reach agent code.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)
# ... and neither do values that carry credentials, such as an index URL with user:password@.
_SECRET_VALUE = re.compile(r"://[^/\s:@]+:[^/\s@]+@")
# Variables that would make the kernel use the harness's Python setup instead of the task's own.
_HARNESS_ONLY = {
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "CONDA_PREFIX",
    "IPYTHONDIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JPY_PARENT_PID",
    "MPLCONFIGDIR",
}
# Variables that point agent code at the user's own configuration, caches, tokens and daemons.
_USER_CONFIG = {
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "TORCH_HOME",
    "KAGGLE_CONFIG_DIR",
    "KUBECONFIG",
    "GNUPGHOME",
    "NETRC",
    "PIP_CONFIG_FILE",
    "NPM_CONFIG_USERCONFIG",
    "CONTAINER_HOST",
    # The operator's login shell: IPython runs ``!command`` in $SHELL, else in ``sh``, and the paper's
    # environment set none, so its ``!source`` failed (``/usr/bin/sh: 1: source: not found``).
    "SHELL",
}
_USER_CONFIG_PREFIXES = ("CONDA_", "GIT_CONFIG", "DOCKER_", "AWS_", "AZURE_", "GOOGLE_", "CLOUDSDK_", "PIP_", "UV_")


class PopenKernelProcess(KernelProcess):
    """A kernel running as a host child process in its own session (process group).

    ``wrapped``: the child is a wrapper (bwrap, timeout, ``docker exec``) that reports a kernel
    killed by signal N as exit status 128 + N; ``poll`` turns that back into -N, as for a bare child.
    ``on_kill`` runs once the process is gone (the harness drops its links to the kernel's sockets).
    """

    def __init__(
        self, popen: subprocess.Popen[bytes], *, wrapped: bool = False, on_kill: Callable[[], None] | None = None
    ) -> None:
        self.popen = popen
        self.wrapped = wrapped
        self._on_kill = on_kill
        supervisor.register("pgid", popen.pid)

    def poll(self) -> int | None:
        status = self.popen.poll()
        if self.wrapped and status is not None and 128 < status < 128 + signal.NSIG:
            return 128 - status
        return status

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.popen.kill()
        supervisor.unregister("pgid", self.popen.pid)
        if self._on_kill is not None:
            on_kill, self._on_kill = self._on_kill, None
            on_kill()


def await_kernel(runtime: KernelRuntime, files: KernelFiles, process: KernelProcess, timeout: float) -> KernelLaunch:
    """The end of every ``launch_kernel``: wait until the kernel has opened its sockets; a kernel that exits
    first or takes longer than ``timeout`` is killed (``KernelError``)."""
    try:
        connection = runtime.connect_info(files, lambda: process.poll() is None, timeout)
    except KernelError:
        process.kill()
        raise
    return KernelLaunch(process, connection)


def scrubbed_environ(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """The host environment minus credentials, the user's own configuration and the harness's Python settings."""
    source = os.environ if environ is None else environ
    return {
        k: v
        for k, v in source.items()
        if not _SECRET_NAME.search(k)
        and not _SECRET_VALUE.search(v)
        and k not in _HARNESS_ONLY
        and k not in _USER_CONFIG
        and not k.startswith(_USER_CONFIG_PREFIXES)
    }


def passed_environ(config: SandboxConfig, environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """What agent code gets of the host's environment on purpose, on top of ``scrubbed_environ``: the variables
    ``pass_env`` names; and either the host's pip configuration (``host_pip_config``: its ``PIP_*`` variables,
    credentials left out) or ``PIP_CONFIG_FILE`` set to the null device, which keeps pip from reading any
    ``pip.conf`` (the system's, the user's, ``XDG_CONFIG_DIRS``')."""
    source = os.environ if environ is None else environ
    if config.host_pip_config:
        passed = {k: v for k, v in source.items() if k.startswith("PIP_") and not _SECRET_VALUE.search(v)}
    else:
        passed = {"PIP_CONFIG_FILE": os.devnull}
    passed.update({name: source[name] for name in config.pass_env if name in source})
    return passed


def rlimit_prefix(config: SandboxConfig, *, processes: bool, address_space: bool = False) -> list[str]:
    """A ``prlimit`` command prefix that applies the configured per-process limits.

    Memory is RLIMIT_DATA (what a process may allocate: an allocation past it fails, so Python
    raises MemoryError rather than being killed), and with ``address_space`` also RLIMIT_AS, which
    counts shared mappings too (where no cgroup bounds the task as a whole); file size is
    RLIMIT_FSIZE; processes is RLIMIT_NPROC, which counts every process and thread of the user, so
    it is only meaningful inside a user namespace of its own.
    """
    limits = []
    if config.memory_limit is not None:
        limits.append(f"--data={config.memory_limit}")
        if address_space:
            limits.append(f"--as={config.memory_limit}")
    if config.max_file_size is not None:
        limits.append(f"--fsize={config.max_file_size}")
    if processes and config.max_processes is not None:
        limits.append(f"--nproc={config.max_processes}")
    return [program("prlimit"), *limits, "--"] if limits else []


def file_io(proc: subprocess.CompletedProcess[bytes], path: str) -> bytes:
    """The output of a command that read or wrote ``path`` inside a sandbox, or its failure as an OSError."""
    if proc.returncode == 0:
        return proc.stdout
    message = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
    if "No such file" in message:
        raise FileNotFoundError(2, message, path)
    if "Permission denied" in message or "Read-only" in message:
        raise PermissionError(13, message, path)
    raise OSError(message)


def make_task_dir(config: SandboxConfig, label: str, mount: Callable[[Path], None] | None = None) -> Path:
    """A new task directory with ``content/``, ``home/`` and ``tmp/``; ``mount`` puts a file system on it first."""
    parent = config.root or Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"super-bench-{label}-", dir=parent))
    if mount is not None:
        mount(root)
    for sub in ("content", "home", "tmp"):
        (root / sub).mkdir()
    return root

"""The host programs the harness starts around agent code, and the environment they run with.

Defends the privilege boundary: no program that agent code can write or name runs with more
privilege than agent code has. Every helper (bwrap, setpriv, prlimit, env, sh, cat, mount, ...)
is started by an absolute path, found on a fixed system search path (never the task's PATH,
whose first entry agent code owns), and only where the file and every directory above it are
owned by root or the harness's own user and writable by no one else. Helpers run with an
environment of which nothing can make them load code: the task's loader and libc variables
(``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``GCONV_PATH``, ...) are taken out and PATH is the fixed
one; the last helper before agent code (``env``) puts the task's own values back.
"""

from __future__ import annotations

import functools
import os
import stat

from super_bench.errors import SandboxError
from super_bench.sandbox.lifetime.reaper import SYSTEM_PATH, system_program

__all__ = ["SYSTEM_PATH", "agent_env_prefix", "find_program", "helper_environ", "program"]

# Variables that make the dynamic loader or the C library read files they name: glibc ignores them in
# set-user-ID programs for this reason, and so do the helpers here, which would run with the harness's privilege.
_LOADER = frozenset(
    {
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TMPDIR",
        "TZDIR",
    }
)
_LOADER_PREFIXES = ("LD_", "MALLOC_")
_HINT = {
    "bwrap": "install bubblewrap (apt-get install bubblewrap)",
    "mkfs.ext4": "install e2fsprogs (apt-get install e2fsprogs)",
}


def _trusted(path: str) -> bool:
    """Whether ``path`` and every directory above it belong to root or to us and are writable by no one else."""
    owners = {0, os.geteuid()}
    current = os.path.realpath(path)
    while True:
        try:
            info = os.stat(current)
        except OSError:
            return False
        if info.st_uid not in owners or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        if current == "/":
            return True
        current = os.path.dirname(current)


@functools.cache
def find_program(name: str) -> str | None:
    """The absolute path of system program ``name`` on the fixed search path, if a trusted one is there."""
    found = system_program(name)
    return found if found is not None and _trusted(found) else None


def program(name: str) -> str:
    """The absolute path of system program ``name``; raises ``SandboxError`` saying what to install."""
    found = find_program(name)
    if found is None:
        hint = _HINT.get(name, "install util-linux and coreutils (apt-get install util-linux coreutils)")
        raise SandboxError(
            f"the sandbox needs the program {name!r} in a system directory ({SYSTEM_PATH}) owned by root and "
            f"writable by no one else: {hint}"
        )
    return found


def _loader_variable(name: str) -> bool:
    return name in _LOADER or name.startswith(_LOADER_PREFIXES)


def helper_environ(env: dict[str, str]) -> dict[str, str]:
    """``env`` as the helpers get it: without loader and libc variables, with the fixed PATH."""
    kept = {k: v for k, v in env.items() if not _loader_variable(k) and k != "PATH"}
    return {**kept, "PATH": SYSTEM_PATH}


def agent_env_prefix(env: dict[str, str]) -> list[str]:
    """The last helper before agent code: ``env`` putting back the task's PATH and loader variables that
    ``helper_environ`` took out (the command itself is then found on the task's PATH, as agent code would)."""
    restored = [f"{k}={v}" for k, v in env.items() if _loader_variable(k) or k == "PATH"]
    return [program("env"), "--", *restored]

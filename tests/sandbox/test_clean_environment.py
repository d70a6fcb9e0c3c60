"""A clean task environment: the host's pip configuration (PIP_* variables, pip.conf files with their
find-links), credentials and settings reach no task unless the user passes them on purpose
(``--host-pip-config``, ``--pass-env NAME``). Checked with pip itself, inside real sandboxes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings, tiny_wheel

from super_bench.sandbox import SandboxConfig
from super_bench.sandbox.backends.support import passed_environ, scrubbed_environ

BACKENDS = ["local", "bwrap"]
# What pip in the task sees of its configuration, and whether it finds a package only the host's wheel folders hold.
PROBE = (
    "echo PIP_VARIABLES: $(env | grep -o '^PIP_[A-Z_]*' | sort | tr '\\n' ' '); "
    "echo CONFIG:; python -m pip config list; "
    "python -m pip download -q --no-deps --no-index -d dl sbhostonly >/dev/null 2>&1 && echo FOUND || echo NOT-FOUND"
)


@pytest.fixture
def host_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The harness's host has a wheel folder in PIP_FIND_LINKS, and a pip.conf (in XDG_CONFIG_DIRS) naming
    another; each holds a package nothing else has. Returns the second folder."""
    by_variable, by_file = tmp_path / "wheels-variable", tmp_path / "wheels-file"
    by_variable.mkdir()
    by_file.mkdir()
    tiny_wheel(by_variable, "sbhostonly", 1)
    tiny_wheel(by_file, "sbhostonly", 2)
    (tmp_path / "xdg" / "pip").mkdir(parents=True)
    (tmp_path / "xdg" / "pip" / "pip.conf").write_text(f"[global]\nfind-links = {by_file}\n")
    os.chmod(tmp_path, 0o755)  # agent code of its own user id could read them, were they shown
    monkeypatch.setenv("PIP_FIND_LINKS", str(by_variable))
    monkeypatch.setenv("PIP_CERT", "/etc/host-only/ca.pem")
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "xdg"))
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
    return by_file


def probe(env_factory: Any, settings: dict[str, Any]) -> str:
    env = env_factory(cell_timeout=120, sandbox=settings)
    env.reset(make_task())
    done = env._sandbox.run(["sh", "-c", PROBE], timeout=120)
    return done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["link", "off"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_host_pip_configuration_does_not_reach_pip_in_a_task(
    env_factory: Any, host_pip: Path, backend: str, cache: str
) -> None:
    shown = probe(env_factory, {**backend_settings(backend), "package_cache": cache})
    variables = shown.split("PIP_VARIABLES:")[1].split("\n")[0].split()
    assert "PIP_CERT" not in variables and "PIP_CONFIG_FILE" in variables, shown
    config = shown.split("CONFIG:")[1]
    # Neither the host's variable nor its file names a wheel folder (the cache's empty find-links may be there).
    assert not re.search(r"find-links='[^']", config) and "wheels-" not in config, shown
    assert "NOT-FOUND" in shown, shown  # pip could not install from the host's wheel folders


@pytest.mark.slow
def test_the_systems_pip_conf_is_not_shown_under_bwrap(env_factory: Any) -> None:
    settings = backend_settings("bwrap")
    env = env_factory(cell_timeout=120, sandbox={**settings, "package_cache": "off"})
    env.reset(make_task())
    # Even a pip told to read every configuration file (PIP_CONFIG_FILE unset) finds the system's empty.
    done = env._sandbox.run(["sh", "-c", "env -u PIP_CONFIG_FILE python -m pip config list; cat /etc/pip.conf"])
    # Only the harness's own variables (":env:" lines): no file's setting ("global.", "site.", "user.").
    assert done.returncode == 0 and not re.search(r"^(global|site|user)\.", done.stdout, re.M), done
    assert "[global]" not in done.stdout, done
    done = env._sandbox.run(["sh", "-c", "ls -A /etc/xdg/pip 2>/dev/null | wc -l"])
    assert done.stdout.strip() == "0", done


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_host_pip_configuration_reaches_a_task_when_asked_for(
    env_factory: Any, host_pip: Path, backend: str
) -> None:
    settings = {**backend_settings(backend), "package_cache": "off", "host_pip_config": True}
    shown = probe(env_factory, settings)
    assert f"find-links='{host_pip.parent / 'wheels-variable'}'" in shown, shown
    if backend == "local":  # bwrap shows none of the host's folders: neither wheel folder is there to install from
        assert f"find-links='{host_pip}'" in shown, shown  # the pip.conf of XDG_CONFIG_DIRS is read
        assert "FOUND" in shown.replace("NOT-FOUND", ""), shown


def test_pass_env_gives_named_variables_as_they_are() -> None:
    host = {"HF_TOKEN": "hf_secret", "PIP_INDEX_URL": "https://user:pw@index.example/simple", "PIP_TIMEOUT": "60"}
    assert passed_environ(SandboxConfig(), host) == {"PIP_CONFIG_FILE": os.devnull}
    passed = passed_environ(SandboxConfig(pass_env=("HF_TOKEN", "NOT_SET_ANYWHERE"), host_pip_config=True), host)
    # Named on purpose, a credential passes; the host's pip settings pass, an index URL with a password does not.
    assert passed == {"HF_TOKEN": "hf_secret", "PIP_TIMEOUT": "60"}


def test_the_hosts_pip_and_uv_settings_are_scrubbed() -> None:
    host = {
        "PIP_FIND_LINKS": "/w",
        "PIP_CONFIG_FILE": "/p.conf",
        "UV_INDEX_URL": "file:///i",
        "NETRC": "/n",
        "LANG": "C",
    }
    assert scrubbed_environ(host) == {"LANG": "C"}

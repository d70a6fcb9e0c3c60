"""``sandbox build``'s package installs: ``--packages-as-of`` (pip's upload-time filter, the date recorded in
the base's record and in every run's task_environment) and ``--torch cpu`` (the PyTorch CPU index, for the
torch packages alone), as pip commands and with a real pip against package indexes served on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from tests.support.helpers import cli
from tests.support.mirror_fixtures import package_index
from tests.support.sandboxes import tiny_wheel, venv_with_this_pip

from super_bench import SandboxConfig
from super_bench.sandbox.pyenv.base_install import (
    TORCH_CPU_INDEX,
    install_list,
    install_steps,
    torch_notes,
    without_pytorch_indexes,
)
from super_bench.sandbox.pyenv.report import describe_task_environment
from super_bench.sandbox.pyenv.super_base import BUILT_MARKER, COLAB_REQUIREMENTS, BaseEnvRecord, _read_requirements

CUTOFF = datetime(2024, 6, 30, tzinfo=timezone.utc)


def test_by_default_torch_comes_from_the_lists_indexes_and_no_pytorch_index_is_named() -> None:
    options, entries = _read_requirements(COLAB_REQUIREMENTS)
    assert any(TORCH_CPU_INDEX in o for o in options)  # the list names it (for the docker image)
    (step,) = install_steps(options, entries)
    assert not any("pytorch.org" in a for a in step) and "torch==2.2.1" in step
    assert not any(a.startswith("--uploaded-prior-to") for a in step)


def test_torch_cpu_takes_the_torch_packages_alone_from_the_cpu_index() -> None:
    options, entries = _read_requirements(COLAB_REQUIREMENTS)
    first, rest = install_steps(options, entries, ("--retries", "2"), torch="cpu", cutoff=CUTOFF)
    assert first == ["--retries", "2", "--no-deps", "--index-url", TORCH_CPU_INDEX, "torch==2.2.1"]
    # Everything else, torch's dependencies included, as without the option, as of the date.
    assert rest[-len(entries) - 2 :] == [*entries, "--retries", "2"]
    assert "--uploaded-prior-to=2024-06-30T00:00:00+00:00" in rest and not any("pytorch.org" in a for a in rest)
    (note,) = torch_notes(entries, "cpu", CUTOFF)
    assert "gives no upload times, so torch==2.2.1 are as the list pins them" in note


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        (["--extra-index-url", "https://download.pytorch.org/whl/cpu"], []),
        (["--extra-index-url=https://download.pytorch.org/whl/cu121", "--pre"], ["--pre"]),
        (
            ["-i", "https://example.org/simple", "-f", "https://download.pytorch.org/whl/torch"],
            ["-i", "https://example.org/simple"],
        ),
    ],
)
def test_the_lists_pytorch_indexes_are_left_to_the_torch_option(options: list[str], kept: list[str]) -> None:
    assert without_pytorch_indexes(options) == kept


def _value(python: str, module: str) -> str:
    code = f"import importlib.metadata as m, {module}; print({module}.VALUE, m.version({module!r}))"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() or "absent"


def test_a_real_pip_installs_torch_from_the_cpu_index_and_the_rest_as_of_the_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)  # this machine's pip configuration is no part of the case
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    wheels = tmp_path / "wheels"
    (wheels / "cpu").mkdir(parents=True)
    (wheels / "pypi").mkdir()
    cuda_torch = tiny_wheel(wheels / "pypi", "torch", 2, "2.2.1", requires=("sbnvidia", "sbdep"))
    cpu_torch = tiny_wheel(wheels / "cpu", "torch", 1, "2.2.1+cpu", requires=("sbdep",))
    # What a PyTorch index hosts besides torch, newer than the list's: never taken from it.
    cpu_extra = tiny_wheel(wheels / "cpu", "sbhelper", 9, "9.0")
    pypi = {
        "torch": {"2.2.1": (cuda_torch, "2024-02-22T00:00:00Z")},
        "sbnvidia": {"1.0": (tiny_wheel(wheels / "pypi", "sbnvidia", 1, "1.0"), "2024-01-01T00:00:00Z")},
        "sbdep": {"1.0": (tiny_wheel(wheels / "pypi", "sbdep", 1, "1.0"), "2024-01-01T00:00:00Z")},
        "sbhelper": {
            "1.0": (tiny_wheel(wheels / "pypi", "sbhelper", 1, "1.0"), "2024-01-01T00:00:00Z"),
            "2.0": (tiny_wheel(wheels / "pypi", "sbhelper", 2, "2.0"), "2025-01-01T00:00:00Z"),
        },
    }
    cpu = {"torch": {"2.2.1+cpu": (cpu_torch, None)}, "sbhelper": {"9.0": (cpu_extra, None)}}
    entries = ["torch==2.2.1", "sbhelper"]
    with package_index(pypi) as (pypi_url, _), package_index(cpu) as (cpu_url, cpu_requests):  # type: ignore[arg-type]
        python = venv_with_this_pip(tmp_path / "cpu-env")
        args = ("--index-url", pypi_url, "--quiet")
        skipped = install_list(python, [], entries, args, torch="cpu", cutoff=CUTOFF, torch_index=cpu_url)
        assert skipped == {}
        assert _value(python, "torch") == "1 2.2.1+cpu"  # the CPU build, without the CUDA dependency
        assert _value(python, "sbnvidia") == "absent" and _value(python, "sbdep") == "1 1.0"
        assert _value(python, "sbhelper") == "1 1.0"  # as of the date, and not from the CPU index
        assert all("sbhelper" not in r for r in cpu_requests)

        python = venv_with_this_pip(tmp_path / "pypi-env")
        requested_before = len(cpu_requests)
        assert install_list(python, [], entries, args, cutoff=CUTOFF) == {}
        assert _value(python, "torch") == "2 2.2.1" and _value(python, "sbnvidia") == "1 1.0"
        assert _value(python, "sbhelper") == "1 1.0" and len(cpu_requests) == requested_before


def test_the_hosts_pip_configuration_changes_nothing_in_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose pip has an extra index without upload times (serving a newer release) and a constraint
    file, in a system-wide pip.conf (``XDG_CONFIG_DIRS``), the user's and ``PIP_*`` variables: the build's pip
    reads none of it, and installs what it would without (the same pip, reading it, would not)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    listed = {"sbhelper": {"1.0": (tiny_wheel(wheels, "sbhelper", 1, "1.0"), "2024-01-01T00:00:00Z")}}
    newer = tmp_path / "newer"
    newer.mkdir()
    extra = {"sbhelper": {"3.0": (tiny_wheel(newer, "sbhelper", 3, "3.0"), None)}}
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("sbhelper==3.0\n")
    with package_index(listed) as (index_url, _), package_index(extra) as (extra_url, extra_requests):  # type: ignore[arg-type]
        system = tmp_path / "xdg" / "pip"
        system.mkdir(parents=True)
        (system / "pip.conf").write_text(f"[global]\nextra-index-url = {extra_url}\nconstraint = {constraints}\n")
        user = tmp_path / "home" / ".config" / "pip"
        user.mkdir(parents=True)
        (user / "pip.conf").write_text(f"[install]\nextra-index-url = {extra_url}\n")
        for name in [n for n in os.environ if n.startswith("PIP_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "xdg"))
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", extra_url)
        monkeypatch.setenv("PIP_CONSTRAINT", str(constraints))
        args = ("--index-url", index_url, "--quiet")
        # The control: the same pip, reading the host's configuration, takes the extra index's release.
        python = venv_with_this_pip(tmp_path / "host-env")
        subprocess.run([python, "-m", "pip", "install", *args, "sbhelper"], check=True)
        assert _value(python, "sbhelper") == "3 3.0"
        asked = len(extra_requests)
        python = venv_with_this_pip(tmp_path / "build-env")
        assert install_list(python, [], ["sbhelper"], args, cutoff=CUTOFF) == {}
        assert _value(python, "sbhelper") == "1 1.0"
        assert len(extra_requests) == asked  # never asked


def _fake_built_base(
    tmp_path: Path, record: BaseEnvRecord, monkeypatch: pytest.MonkeyPatch, torch: str | None = None
) -> None:
    """A base environment as `sandbox build` leaves it (a virtual environment and its record), without packages
    but, given its version, torch's record."""
    base = tmp_path / "base-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True)
    if torch is not None:
        (site,) = base.glob("lib/python*/site-packages")
        (site / f"torch-{torch}.dist-info").mkdir()
        (site / f"torch-{torch}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: torch\nVersion: {torch}\n"
        )
    (base / BUILT_MARKER).write_text(record.model_dump_json())
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(base))


def test_the_date_and_the_torch_source_reach_every_runs_task_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = BaseEnvRecord(
        python=sys.executable,
        version="3.11.7",
        requirements=str(COLAB_REQUIREMENTS),
        packages_as_of=date(2024, 3, 1).isoformat(),
        torch="cpu",
        built_at=datetime.now(timezone.utc),
    )
    _fake_built_base(tmp_path, record, monkeypatch, torch="2.2.1+cpu")
    info = describe_task_environment(SandboxConfig(backend="local"))
    assert info.kind == "built" and info.packages_as_of == "2024-03-01" and info.torch == "cpu"
    assert "packages as of 2024-03-01, CPU-only torch" in info.summary
    assert not [d for d in info.differences if "torch" in d]  # the paper's CPU build
    undated = record.model_copy(update={"packages_as_of": None, "torch": "pypi"})
    _fake_built_base(tmp_path / "undated", undated, monkeypatch, torch="2.2.1")
    info = describe_task_environment(SandboxConfig(backend="local"))
    assert info.packages_as_of is None and "as of" not in info.summary and "CPU" not in info.summary
    # PyPI's CUDA build (asked for, or the fallback where the CPU index did not answer) is a recorded difference.
    assert "torch from PyPI (with CUDA libraries), not the CPU build 2.2.1+cpu the paper's runs had" in info.differences


def test_sandbox_build_reads_the_date_as_run_does_and_keeps_pips_options_off_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUPER_BENCH_BASE_ENV", str(tmp_path / "never"))
    bad = cli("sandbox", "build", "--packages-as-of", "last spring", "--yes", cwd=tmp_path)
    assert bad.returncode == 2 and "--packages-as-of" in bad.stderr and "not a date" in bad.stderr
    # The image takes the date, torch and interpreter as the base does (one environment); pip's own options not.
    docker = cli("sandbox", "build", "--backend", "docker", "--pip-arg=--no-index", "--yes", cwd=tmp_path)
    assert docker.returncode == 2 and "the docker sandbox's build takes no --pip-arg" in docker.stderr
    assert not (tmp_path / "never").exists()  # nothing was built

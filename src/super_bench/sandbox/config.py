"""How task sandboxes are made (``SandboxConfig``, grouped: the limits, what a task may fetch, the docker
backend's options) and what ``super-bench sandbox build`` asks of a backend (``BuildRequest``, ``BuildReport``).

Only settings live here; the contract they configure is ``base.Sandbox``.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from super_bench._names import DiskEnforcement, MemoryEnforcement, PackageCacheMode
from super_bench._pydantic import Model
from super_bench._sizes import human_size, parse_size
from super_bench.sandbox.mirrors.settings import GitMirrorMap, HfCacheDir, OfflineBundleDir, PackagesAsOf, PipIndexUrl

# The least disk a task directory may have: room for a kernel's files and a small repository.
MIN_DISK_LIMIT = 16 << 20


class LimitSettings(Model):
    """What a task may take of the machine: memory, processes, file size, disk and wall time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_limit: int | None = Field(
        None, description="Bytes of memory the task may use, shared memory included (see memory_enforcement)"
    )
    memory_enforcement: MemoryEnforcement = Field(
        "auto",
        description="How the memory limit is enforced (local, bwrap): a cgroup of the task's own (auto, where one "
        "can be made) or an address-space limit per process",
    )
    max_processes: int | None = Field(
        1024, gt=0, description="Processes and threads the task may run at once (bwrap, docker)"
    )
    max_file_size: int | None = Field(None, description="Largest file the task may write, in bytes")
    disk_limit: int | None = Field(
        None, description="Bytes of disk the task directory may take (local, bwrap; see disk_enforcement)"
    )
    disk_enforcement: DiskEnforcement = Field(
        "auto",
        description="How the disk limit is enforced: a file system of the task's own (auto, where one can be made: "
        "writes past it fail) or a watch on the task directory (past it the task is stopped)",
    )
    wall_time_limit: float | None = Field(
        None, gt=0, description="Seconds after which everything the task runs is killed and nothing more starts"
    )

    @field_validator("memory_limit", "max_file_size", "disk_limit", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return parse_size(value) if isinstance(value, str) else value

    @field_validator("memory_limit", "max_file_size", "disk_limit")
    @classmethod
    def _at_least(cls, value: int | None, info: ValidationInfo) -> int | None:
        # Said in sizes people write, not as pydantic's bound in bytes.
        least = MIN_DISK_LIMIT if info.field_name == "disk_limit" else 1
        if value is not None and value < least:
            raise ValueError(
                f"{human_size(value) if value > 0 else value} is below the least allowed, {human_size(least)} "
                "(write it like 8g or 512m)"
            )
        return value


class SupplySettings(Model):
    """What a task may fetch, and from where: git mirrors, the package index and its date, the Hugging Face
    cache, offline bundles, the package cache, and whether pip reads the host's configuration."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host_pip_config: bool = Field(
        False,
        description="pip in tasks reads the host's pip configuration (its PIP_* variables and pip.conf files); "
        "by default it knows only what the harness sets",
    )
    # Mirrors and time travel (mirrors/; docs/environment.md).
    git_mirrors: GitMirrorMap = Field(
        default_factory=dict,
        description="Repository URL -> a bare repository, clone or git bundle serving it; or URL prefix -> "
        "a directory of such mirrors",
    )
    pip_index: PipIndexUrl = Field(None, description="The package index (or proxy) pip uses, and no other")
    packages_as_of: PackagesAsOf = Field(
        None, description="pip installs what was uploaded by the end of this day (UTC), or before this moment"
    )
    hf_cache: HfCacheDir = Field(None, description="A Hugging Face cache shown read-only to tasks, used offline")
    offline_bundle: OfflineBundleDir = Field(
        None, description="A directory `super-bench mirror` made: repositories, wheels"
    )
    # The package cache (packages/; docs/sandboxes.md#the-package-cache).
    package_cache: PackageCacheMode = Field(
        "link",
        description="pip inside tasks installs through the harness's caching proxy of the package index (link: "
        "the files of wheels are read-only links to the cache where that is safe; copy: always copies; off: no cache)",
    )
    package_cache_dir: Path | None = Field(
        None, description="Where the package cache is kept (default: packages in super-bench's cache directory)"
    )


class DockerSettings(Model):
    """The options of the docker backend alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | None = Field(None, description="Image of the docker backend (default: the one sandbox build makes)")
    engine: str | None = Field(None, description="Container engine of the docker backend: docker or podman")
    ca_bundle: Path | None = Field(
        None,
        description="A CA bundle shown read-only to tasks of the docker backend, for pip, requests, OpenSSL and git "
        "(the host's trust store, behind a TLS-intercepting proxy); it replaces the image's",
    )


class PlaceSettings(Model):
    """Where a task runs and what it gets of the host: the backend, the task directories, the interpreter its
    environment is layered over, the network and agent code's variables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = Field("auto", description="auto, local, bwrap or docker")
    root: Path | None = Field(None, description="Parent directory of task directories (default: system temp)")
    keep: bool = Field(False, description="Keep each task directory after the task ends")
    task_python: Path | None = Field(
        None, description="Interpreter the task environment is layered over (default: the harness's own)"
    )
    network: bool = Field(True, description="Agent code may use the network (bwrap and docker can cut it)")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for agent code")
    pass_env: tuple[str, ...] = Field(
        (), description="Host environment variables agent code gets as they are (credentials too), by name"
    )


class SandboxConfig(SupplySettings, DockerSettings, LimitSettings, PlaceSettings):
    """How task sandboxes are made. One config serves every task of a run.

    Its settings come in parts, each a model of its own that the code concerned can take alone:
    ``PlaceSettings`` (backend, directories, network, variables), ``LimitSettings``, ``DockerSettings`` (the
    docker backend's options) and ``SupplySettings`` (what a task may fetch: what ``supply`` and the mirrors
    read). The parts are its bases, not nested fields, so that the keys users write (``memory_limit=``,
    ``git_mirrors=``, ``--memory-limit``) and run.json records stay the flat names they have always been.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class BuildRequest(Model):
    """What ``super-bench sandbox build`` asks a backend to build: the package list, and the options of the
    command line that were given (a backend's ``build_options`` names those it takes)."""

    model_config = ConfigDict(frozen=True)

    requirements: Path = Field(description="The package list to install")
    python: str | None = Field(None, description="Interpreter to build from: a path or a command on PATH")
    pip_args: tuple[str, ...] = Field((), description="Extra arguments for pip")
    engine: str | None = Field(None, description="Container engine")
    tag: str | None = Field(None, description="Tag of the image built")
    base_image: str | None = Field(None, description="Image to build over")
    kernel_only: bool = Field(False, description="Build only the kernel's layer")
    ca_bundle: Path | None = Field(None, description="A CA bundle for the build's downloads")
    packages_as_of: date | datetime | None = Field(None, description="Install the packages as they were then")
    torch: Literal["pypi", "cpu"] | None = Field(
        None, description="Where torch comes from (default: cpu, the paper's 2.2.1+cpu where its index answers)"
    )


class BuildReport(Model):
    """What a backend's build made: one line to say so, and what the user should know of it."""

    model_config = ConfigDict(frozen=True)

    built: str = Field(description="What was built, and what now uses it (one line)")
    notes: tuple[tuple[str, str], ...] = Field(
        (), description="(heading, text) pairs: what was left out, or differs from the paper's environment"
    )

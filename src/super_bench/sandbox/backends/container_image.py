"""The docker sandbox's images, built by ``super-bench sandbox build --sandbox docker`` in two layers.

- The kernel layer (``super-bench-kernel:VERSION``, small): any Debian-like base image with a Python,
  given python3 and venv (installed with apt where the base lacks them) and tini; the task's environment
  at ``/venv`` (first on PATH, so that agents ``pip install`` as on Colab); the notebook kernel's own
  packages in ``/opt/super-bench/kernel``, apart from the task's. Those packages are prepared on the host
  (copied from the harness's own where the Python versions agree, else downloaded by the host's pip for
  the image's version), so this layer needs no package index inside the build.
- The SUPER layer (``super-bench-task:VERSION``, about 6 GB): over the kernel layer, the build tools and
  SUPER's package list, installed by pip inside the build with the very commands ``sandbox build`` uses for
  the local and bwrap base (``--packages-as-of``'s date, the same indexes, torch's source), then pip 24.0.

Python 3.10, SUPER's, is used where the base has it, else the interpreter the other backends' base is built
from, copied in (``container_python``), else the base's own ``python3``; what differs from the paper's
environment is written into the image's labels, and runs record it. A CA bundle given for
the build (the host's trust store, for hosts behind a TLS-intercepting proxy) is mounted read-only into
the steps that download, never copied into a layer; nothing else of the host's pip configuration is used
inside the build.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import Field

from super_bench._files import read_regular
from super_bench._paths import cache_dir
from super_bench._pydantic import Model
from super_bench._version import __version__
from super_bench.errors import SandboxError
from super_bench.sandbox.backends.container_engine import Engine, find_engine, image_exists
from super_bench.sandbox.backends.container_python import StagedPython, stage_python
from super_bench.sandbox.isolated_pip import isolated_pip_environ
from super_bench.sandbox.launch.kernel_env import kernel_env
from super_bench.sandbox.mirrors.serving import PIP_WITH_UPLOAD_FILTER
from super_bench.sandbox.pyenv.base_install import TORCH_CPU_INDEX, TorchSource, install_steps
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP
from super_bench.sandbox.pyenv.super_base import (
    COLAB_REQUIREMENTS,
    PAPER_PYTHON,
    ListPlan,
    find_python,
    index_answers,
    plan_list,
)
from super_bench.sandbox.pyenv.task_env import DEFAULT_PACKAGES

DEFAULT_IMAGE = f"super-bench-task:{__version__}"
KERNEL_IMAGE = f"super-bench-kernel:{__version__}"
# Where the image keeps the kernel's own packages and its boot script (see kernel_boot.py).
IMAGE_KERNEL_DIR = "/opt/super-bench/kernel"
IMAGE_KERNEL_BOOT = f"{IMAGE_KERNEL_DIR}/kernel_boot.py"
LABEL = "io.super-bench.image"
# Where a CA bundle given to tasks or builds appears inside.
CA_BUNDLE_INSIDE = "/etc/super-bench/ca-bundle.crt"

# Which interpreter the base has: SUPER's 3.10 first, with venv and ensurepip (Debian splits them out).
_PROBE = """
for p in python3.10 python3; do
  if command -v "$p" >/dev/null 2>&1; then
    venv=no; "$p" -c 'import venv, ensurepip' >/dev/null 2>&1 && venv=yes
    echo "python=$p"; echo "venv=$venv"; "$p" -c 'import sys; print("version=%d.%d.%d" % sys.version_info[:3])'
    break
  fi
done
command -v apt-get >/dev/null 2>&1 && echo apt=yes
command -v tini >/dev/null 2>&1 && echo tini=yes
command -v git >/dev/null 2>&1 && echo git=yes
true
"""
_SUPER_TOOLS = (
    "build-essential cmake default-jdk-headless git git-lfs less nano procps unzip util-linux vim-tiny wget zip"
)


class ImageInfo(Model):
    """What a built image is, from its label: recorded in each run's manifest."""

    image: str
    layer: str = Field(description="kernel (no SUPER packages) or super")
    base: str
    python: str = Field(description="The task interpreter's version (3.10.13; major.minor in older images)")
    differences: list[str] = Field(default_factory=list, description="How it differs from the paper's environment")
    torch: str | None = Field(
        None,
        description="Where the SUPER layer's torch came from: cpu (the PyTorch CPU index, the paper's 2.2.1+cpu) or "
        "pypi (PyPI's CUDA build: the CPU index was unreachable when the image was built, or --torch pypi)",
    )
    packages_as_of: str | None = Field(None, description="The date its packages were installed as of (UTC)")
    skipped: dict[str, str] = Field(default_factory=dict, description="Entries of the list left out, with why")
    notes: list[str] = Field(default_factory=list, description="What the build decided, as the base's record says")

    @property
    def summary(self) -> str:
        if self.layer != "super":
            what = "the kernel layer only, no SUPER packages"
            return f"the image {self.image} ({what}, Python {self.python}, over {self.base})"
        dated = f", packages as of {self.packages_as_of}" if self.packages_as_of else ""
        cpu = ", CPU-only torch" if self.torch == "cpu" else ""
        return f"the image {self.image} (SUPER's package list, Python {self.python}{dated}{cpu}, over {self.base})"


def image_info(engine: Engine, image: str) -> ImageInfo | None:
    """The label ``sandbox build`` wrote into ``image`` (None for an image made otherwise)."""
    proc = subprocess.run(
        [*engine.command, "image", "inspect", "--format", "{{json .Config.Labels}}", image],
        capture_output=True,
        text=True,
    )
    try:
        labels = json.loads(proc.stdout) or {}
        return ImageInfo.model_validate_json(labels[LABEL])
    except (ValueError, KeyError, TypeError):
        return None


# What a task's Python in the image is, as a task sees it: its version, and every distribution on its path
# (what `pip freeze` lists, pip included).
_ENVIRONMENT = (
    "import importlib.metadata as m, json, sys; "
    "print(json.dumps({'python': '%d.%d.%d' % sys.version_info[:3], "
    "'packages': {d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}}))"
)


def image_environment(engine: Engine, image: str) -> dict[str, Any] | None:
    """The task Python of ``image`` as tasks find it (``/venv/bin/python``: its full version, its pip, every
    package on its path), from a container without network; None where it cannot be run.

    A container's start costs about a second: what it found is noted in the cache directory by the image's id
    (an image never changes under its id; a rebuild under the same tag is another id) and read from there."""
    ident = _engine(engine, ["image", "inspect", "--format", "{{.Id}}", image], capture_output=True, timeout=60)
    image_id = ident.stdout.strip().removeprefix("sha256:") if ident.returncode == 0 else ""
    note = cache_dir() / "image-environments" / f"{image_id}.json" if image_id.isalnum() else None
    found = _noted(note) if note is not None else None
    if found is None:
        command = ["run", "--rm", "--network", "none", *engine.run_args, image, "/venv/bin/python", "-c", _ENVIRONMENT]
        try:
            proc = _engine(engine, command, capture_output=True, timeout=120)
            found = json.loads(proc.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        if not isinstance(found, dict):
            return None
        if note is not None:
            with contextlib.suppress(OSError):  # measured again next time
                note.parent.mkdir(parents=True, exist_ok=True)
                partial = note.with_name(f".{note.name}-{os.getpid()}-{threading.get_ident()}")
                partial.write_text(json.dumps(found))
                os.replace(partial, note)
    packages = found.get("packages") or {}
    pip = next((v for k, v in packages.items() if k.lower() == "pip"), None)
    return {"python": str(found.get("python")), "pip": pip, "packages": packages}


def _noted(note: Path) -> dict[str, Any] | None:
    """What an earlier measure of the image noted, where it reads as one."""
    try:
        found = json.loads(read_regular(note, limit=64 << 20))
    except (OSError, ValueError):
        return None
    packages = found.get("packages") if isinstance(found, dict) else None
    if not isinstance(packages, dict) or not all(isinstance(v, str) for v in packages.values()):
        return None
    return found if isinstance(found.get("python"), str) else None


def default_image(engine: Engine) -> str:
    """The SUPER image where it is built, else the kernel image (``--kernel-only``)."""
    for image in (DEFAULT_IMAGE, KERNEL_IMAGE):
        if image_exists(engine, image):
            return image
    return DEFAULT_IMAGE


def image_tags(tag: str | None, kernel_only: bool) -> tuple[str, str]:
    """The tags a build gives (SUPER's image, its kernel layer): ``--tag`` names the image built, the kernel
    layer's own with ``--kernel-only``; over SUPER's, the kernel layer goes beside it (``NAME-kernel:VERSION``),
    so that two builds with tags of their own never overwrite each other's. Without one, the defaults."""
    if tag is None:
        return DEFAULT_IMAGE, KERNEL_IMAGE
    if kernel_only:
        return tag, tag
    name, colon, version = tag.rpartition(":")
    if not colon or "/" in version:  # no version: the colon, if any, is a registry's port
        return tag, f"{tag}-kernel"
    return tag, f"{name}-kernel:{version}"


def build_images(
    base: str,
    *,
    engine_name: str | None = None,
    tag: str | None = None,
    requirements: Path = COLAB_REQUIREMENTS,
    kernel_only: bool = False,
    ca_bundle: Path | None = None,
    python: str | None = None,
    packages_as_of: date | datetime | None = None,
    torch: TorchSource = "cpu",
    echo: Callable[[str], None] = print,
) -> ImageInfo:
    """Build the kernel image over ``base``, then (unless ``kernel_only``) the SUPER image over it; their tags
    are ``image_tags``'s. The SUPER layer installs the list as ``sandbox build`` does for the other backends'
    base (``plan_list``, ``install_steps``: the same indexes, date and torch), with the same interpreter."""
    tag, kernel_tag = image_tags(tag, kernel_only)
    engine = find_engine(engine_name)
    if not image_exists(engine, base) and _engine(engine, ["pull", base]).returncode != 0:
        raise SandboxError(
            f"the base image {base} is not here and cannot be pulled; make one from Debian packages "
            "(debootstrap, then import it: see docs/sandboxes.md) or pull one where a registry is reachable"
        )
    engine = find_engine(engine_name, base)
    found = _probe(engine, base)
    if "python" not in found and "apt" not in found:
        raise SandboxError(f"the base image {base} has no python3 and no apt-get to install one: choose another")
    with tempfile.TemporaryDirectory(prefix="super-bench-image-") as tmp:
        build = _Build(engine, Path(tmp), ca_bundle)
        # The kernel layer alone (the demo's image, CI's) keeps the base's Python unless --python names one.
        staged = _paper_python(found, python, build.context, echo) if python or not kernel_only else None
        echo(f"Building the kernel layer over {base} with {engine.describe()}")
        # The system part goes under a tag of its own, so that the kernel image is never half built.
        system = f"super-bench-build-{secrets.token_hex(6)}:system"
        build(_system_layer(base, found, staged), system)
        try:
            info = _kernel_layer(build, base, system, kernel_tag, staged)
        finally:
            _engine(engine, ["rmi", system], capture_output=True)  # the tag only: the layers are the kernel's
        if kernel_only:
            return info
        echo(f"Building SUPER's layer over {kernel_tag} (SUPER's package list: several GB)")
        plan = plan_list(requirements, torch, packages_as_of, echo)
        entries, skipped = reachable_entries(plan.entries, echo)
        differences = [d for d in info.differences if d != _KERNEL_ONLY]
        if plan.torch == "pypi":
            differences.append(_TORCH_FROM_PYPI)
        differences += [f"{entry.split(' @ ')[0]} left out: {why}" for entry, why in skipped.items()]
        dated = packages_as_of.isoformat() if packages_as_of is not None else None
        update = {"image": tag, "layer": "super", "differences": differences, "torch": plan.torch}
        info = info.model_copy(update={**update, "packages_as_of": dated, "skipped": skipped, "notes": plan.notes})
        build(super_layer(kernel_tag, info, plan, entries, ca_bundle is not None), tag)
        return info


_KERNEL_ONLY = "none of SUPER's packages: the kernel layer only"
_TORCH_FROM_PYPI = (
    f"torch 2.2.1 from PyPI (with CUDA libraries), not the CPU build 2.2.1+cpu the paper's runs had: the PyTorch "
    f"CPU index {TORCH_CPU_INDEX} was unreachable when the image was built, or --torch pypi was asked for"
)


def _paper_python(
    found: dict[str, str], python: str | None, context: Path, echo: Callable[[str], None]
) -> StagedPython | None:
    """The paper's interpreter, staged for the image, where the base lacks Python 3.10 (or ``--python`` names
    one): the interpreter the other backends' base is built from (``container_python``). None where the
    base's own is used: it has a 3.10, or this machine has none to give (the difference is then recorded)."""
    if found.get("version", "").startswith(PAPER_PYTHON + ".") and python is None:
        return None
    staged = stage_python(find_python(python), context / "python")
    if python is None and staged.short != PAPER_PYTHON:
        shutil.rmtree(context / "python")
        echo(f"No Python {PAPER_PYTHON} here to copy into the image: it keeps the base's, recorded as a difference")
        return None
    echo(f"The image's Python: {staged.version}, copied from {staged.source} (as the other backends' base)")
    return staged


def reachable_entries(entries: list[str], echo: Callable[[str], None]) -> tuple[list[str], dict[str, str]]:
    """The entries to install, and those left out with why: an entry at a URL (the spaCy model, on GitHub)
    whose host does not answer, asked once here (pip inside the build would retry it, then fail the list)."""
    kept: list[str] = []
    skipped: dict[str, str] = {}
    for entry in entries:
        _, at, url = entry.partition(" @ ")
        url = url.split("#")[0].strip()
        if at and not index_answers(url):
            skipped[entry] = f"{url} does not answer"
            echo(f"Left out {entry.split(' @ ')[0]}: {skipped[entry]}")
            continue
        kept.append(entry)
    return kept, skipped


def _kernel_layer(
    build: _Build, base: str, system: str, kernel_tag: str, staged: StagedPython | None = None
) -> ImageInfo:
    """The kernel's packages and the minimal default, prepared on the host for the image's Python (by the
    staged interpreter's own pip where it was copied from this machine)."""
    full = _probe(build.engine, system)["version"]
    version = ".".join(full.split(".")[:2])
    host_python = staged.source if staged is not None else f"python{version}"
    shutil.copytree(kernel_env(host_python, version), build.context / "kernel")
    _download_wheels(version, build.context / "wheels")
    differences = [] if version == PAPER_PYTHON else [f"Python {full}, not {PAPER_PYTHON} as in the paper's"]
    info = ImageInfo(image=kernel_tag, layer="kernel", base=base, python=full, differences=[*differences, _KERNEL_ONLY])
    build(
        [
            f"FROM {system}",
            f"COPY kernel {IMAGE_KERNEL_DIR}",
            # Byte code written by the image's own Python, against the files as the image holds them: what came
            # from the host was found stale there for a third of the modules, so every kernel of every container
            # compiled them again (about 0.2 s of each start). A file that cannot compile fails at import anyway.
            f"RUN python3 -m compileall -q -f -j 0 {IMAGE_KERNEL_DIR}/packages > /dev/null || true",
            # The task's environment starts as the other backends' minimal default (pip, setuptools, numpy).
            "RUN --mount=type=bind,source=wheels,target=/tmp/wheels /venv/bin/python -m pip install --no-index "
            f"--no-cache-dir --find-links /tmp/wheels {' '.join(_pinned(version))}",
            f"LABEL {LABEL}={json.dumps(info.model_dump_json())}",
        ],
        kernel_tag,
    )
    return info


def _pinned(version: str) -> list[str]:
    """The minimal default's packages, at the harness's own versions where the Python versions agree; pip at
    the paper's version (24.0), as task environments over the other backends' bases get it."""
    same = version == f"{sys.version_info[0]}.{sys.version_info[1]}"
    pinned = []
    for name in DEFAULT_PACKAGES:
        if name == "pip":
            pinned.append(f"pip=={PAPER_PIP}")
            continue
        try:
            pinned.append(f"{name}=={metadata.version(name)}" if same else name)
        except metadata.PackageNotFoundError:
            pinned.append(name)
    return pinned


def _download_wheels(version: str, target: Path) -> None:
    """Wheels of the minimal default for the image's Python, fetched by the host's pip (its configuration left
    out: ``isolated_pip``), so that the build needs no package index inside."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += ["--only-binary=:all:", "--python-version", version, "--dest", str(target), *_pinned(version)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800, env=isolated_pip_environ())
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise SandboxError(f"cannot download {', '.join(DEFAULT_PACKAGES)} for Python {version}: {' / '.join(detail)}")


def _engine(engine: Engine, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*engine.command, *args], text=True, **kwargs)  # type: ignore[call-overload, no-any-return]


def _probe(engine: Engine, image: str) -> dict[str, str]:
    proc = _engine(
        engine, ["run", "--rm", "--network", "none", *engine.run_args, image, "sh", "-c", _PROBE], capture_output=True
    )
    if proc.returncode != 0:
        raise SandboxError(f"cannot run a shell in the image {image}: {proc.stderr.strip()}")
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def _system_layer(base: str, found: dict[str, str], staged: StagedPython | None = None) -> list[str]:
    """The base, with python3 and venv and tini (from apt where missing), the paper's interpreter where it is
    staged, and the task's environment at /venv, made from it."""
    python = staged.inside if staged is not None else found.get("python", "python3")
    packages = [] if "python" in found else ["python3", "python3-venv"]
    if staged is None and found.get("venv") == "no":
        packages.append(f"{python}-venv" if python != "python3" else "python3-venv")
    if staged is not None and "python" not in found:
        packages.remove("python3-venv")  # the staged interpreter has its own; Debian's python3 brings the libraries
    if "tini" not in found:
        packages.append("tini")
    if "git" not in found:  # tasks clone their repositories (from mirrors and bundles offline)
        packages += ["git", "ca-certificates"]
    lines = [
        f"FROM {base}",
        "ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "
        "PYTHONUNBUFFERED=1 MPLBACKEND=module://matplotlib_inline.backend_inline",
    ]
    if packages:
        if "apt" not in found:
            raise SandboxError(f"the base image {base} lacks {' '.join(packages)} and has no apt-get to install them")
        # The package lists are kept, so that agents can `apt-get install` as they could on Colab.
        lines.append(f"RUN apt-get update && apt-get install -y --no-install-recommends {' '.join(packages)}")
    if staged is not None:
        lines += staged.dockerfile_lines("python")
    lines += [
        # The task's environment: what agents install goes here; the system's Python stays as built.
        f"RUN {python} -m venv /venv",
        "ENV PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin VIRTUAL_ENV=/venv",
        "WORKDIR /content",
        # tini reaps the orphans agent code leaves behind; super-bench runs `sleep` as the main process.
        'ENTRYPOINT ["tini", "--"]',
        'CMD ["sleep", "infinity"]',
    ]
    return lines


def super_layer(kernel_tag: str, info: ImageInfo, plan: ListPlan, entries: list[str], ca: bool) -> list[str]:
    """SUPER's layer: a fresh /venv, as the other backends' base starts (the interpreter's own pip and
    setuptools), the list installed by the same pip commands as there (``install_steps``: a pip with the
    upload-time filter, the same indexes, date and torch), then the paper's pip 24.0 for the tasks."""
    # A CA bundle is mounted into the steps that download, never copied into a layer.
    mount = f"--mount=type=bind,source=ca-bundle.crt,target={CA_BUNDLE_INSIDE} " if ca else ""
    cert = f"PIP_CERT={CA_BUNDLE_INSIDE} " if ca else ""
    pip = f"{cert}/venv/bin/python -m pip install --no-cache-dir --disable-pip-version-check --no-warn-script-location"
    # The interpreter /venv was made from (the staged paper's, else the base's), to make it again.
    base_python = "$(/venv/bin/python -c 'import os, sys; print(os.path.realpath(sys._base_executable))')"
    lines = [
        f"FROM {kernel_tag}",
        f"RUN apt-get update && apt-get install -y --no-install-recommends {_SUPER_TOOLS}",
        f'RUN python="{base_python}" && rm -rf /venv && "$python" -m venv /venv',
        f"RUN {mount}{pip} --upgrade 'pip>={PIP_WITH_UPLOAD_FILTER[0]}'",
    ]
    lines += [
        f"RUN {mount}{pip} {shlex.join(step)}"
        for step in install_steps(plan.options, entries, torch=plan.torch, cutoff=plan.cutoff)
    ]
    lines += [
        f"RUN {mount}{pip} pip=={PAPER_PIP}",
        f"LABEL {LABEL}={json.dumps(info.model_dump_json())}",
    ]
    return lines


@dataclass
class _Build:
    """Builds images from Dockerfile lines in one context directory, with the engine's settings."""

    engine: Engine
    context: Path
    ca_bundle: Path | None

    def __call__(self, lines: list[str], tag: str) -> None:
        (self.context / "Dockerfile").write_text("\n".join(lines) + "\n")
        if self.ca_bundle is not None:
            shutil.copyfile(self.ca_bundle, self.context / "ca-bundle.crt")
        # The build's downloads (apt, pip) use the host's network: the engine's own may not reach out.
        command = ["build", "--network", "host", *_build_ulimits(self.engine), "-t", tag, str(self.context)]
        if _engine(self.engine, command).returncode != 0:
            raise SandboxError(f"building the image {tag} failed (the engine's output is above)")


def _build_ulimits(engine: Engine) -> list[str]:
    """Podman's builds start containers too, and need the same explicit ulimits as its runs."""
    return list(engine.run_args) if engine.name == "podman" else []


def host_ca_bundle() -> Path | None:
    """The CA bundle pip on the host uses (``PIP_CERT``, else pip's ``cert`` setting), where one is set."""
    if os.environ.get("PIP_CERT"):
        return Path(os.environ["PIP_CERT"])
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.cert"], capture_output=True, text=True, timeout=60
    )
    value = proc.stdout.strip()
    return Path(value) if proc.returncode == 0 and value else None

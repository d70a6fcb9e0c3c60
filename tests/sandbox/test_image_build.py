"""The docker build's decisions, without building: the tags it gives (``--tag`` for every image, the
kernel-only layer's too), where its torch comes from (the PyTorch CPU index asked once; where it does not
answer, the list without it and the fallback named), the pip commands of SUPER's layer (those of the other
backends' base build) and the entries it leaves out."""

from __future__ import annotations

import os
import shlex
import socket
import sys
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from super_bench.sandbox.backends.container_image import (
    DEFAULT_IMAGE,
    KERNEL_IMAGE,
    ImageInfo,
    _paper_python,
    _system_layer,
    image_tags,
    reachable_entries,
    super_layer,
)
from super_bench.sandbox.mirrors.serving import PIP_WITH_UPLOAD_FILTER
from super_bench.sandbox.pyenv.base_install import install_steps
from super_bench.sandbox.pyenv.paper_pip import PAPER_PIP
from super_bench.sandbox.pyenv.super_base import COLAB_REQUIREMENTS, plan_list


@pytest.mark.parametrize(
    ("tag", "kernel_only", "tags"),
    [
        (None, False, (DEFAULT_IMAGE, KERNEL_IMAGE)),
        (None, True, (DEFAULT_IMAGE, KERNEL_IMAGE)),
        ("job-a:1", True, ("job-a:1", "job-a:1")),  # the kernel-only layer is the image built: it gets the tag
        ("job-a:1", False, ("job-a:1", "job-a-kernel:1")),  # its kernel layer beside it, never the default's
        ("localhost:5000/team/img", False, ("localhost:5000/team/img", "localhost:5000/team/img-kernel")),
        ("img", False, ("img", "img-kernel")),
    ],
)
def test_every_image_a_build_makes_is_named_by_its_tag(
    tag: str | None, kernel_only: bool, tags: tuple[str, str]
) -> None:
    assert image_tags(tag, kernel_only) == tags


def test_two_tagged_builds_share_no_image() -> None:
    a, b = image_tags("job-a:1", False), image_tags("job-b:1", False)
    assert not set(a) & set(b) and not set(a) & {DEFAULT_IMAGE, KERNEL_IMAGE}


def _closed_url(path: str) -> str:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}{path}"
    closed.close()  # nothing listens there: the connection is refused
    return url


def test_an_unreachable_pytorch_index_is_asked_once_and_torch_comes_from_pypi() -> None:
    url = _closed_url("/whl/cpu")
    said: list[str] = []
    plan = plan_list(COLAB_REQUIREMENTS, "cpu", None, said.append, torch_index=url)
    assert plan.torch == "pypi" and "torch==2.2.1" in plan.entries
    assert not [o for o in plan.options if "pytorch" in o or url in o]  # no step of the build names it
    assert said == [f"the PyTorch CPU index {url} is unreachable: torch comes from PyPI (with CUDA libraries)"]
    assert said[0] in plan.notes
    layer = super_layer("kernel:1", ImageInfo(image="i", layer="super", base="b", python="3.10.13"), plan, [], False)
    assert not [line for line in layer if "--index-url" in line or url in line]


def test_a_reachable_pytorch_index_gives_torch_alone_from_it() -> None:
    asked: list[str] = []

    class Index(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/whl/cpu"
        plan = plan_list(COLAB_REQUIREMENTS, "cpu", None, print, torch_index=url)
        assert plan.torch == "cpu" and asked == ["/whl/cpu"]  # once
    finally:
        server.shutdown()
        server.server_close()


def test_the_image_installs_the_list_by_the_other_backends_pip_commands() -> None:
    """One package set on every backend: SUPER's layer runs, in order, the very pip commands with which
    ``sandbox build`` installs the local and bwrap base (same date, indexes and torch), from a fresh /venv,
    after a pip with the upload-time filter, and ends with the paper's pip."""
    plan = plan_list(COLAB_REQUIREMENTS, "pypi", date(2024, 8, 19), print)
    info = ImageInfo(image="i", layer="super", base="b", python="3.10.13", packages_as_of="2024-08-19")
    layer = super_layer("kernel:1", info, plan, plan.entries, False)
    runs = [line.removeprefix("RUN ") for line in layer if line.startswith("RUN ")]
    pip = "/venv/bin/python -m pip install --no-cache-dir --disable-pip-version-check --no-warn-script-location "
    steps = install_steps(plan.options, plan.entries, torch=plan.torch, cutoff=plan.cutoff)
    installs = [shlex.split(run.removeprefix(pip)) for run in runs if run.startswith(pip)]
    assert installs == [["--upgrade", f"pip>={PIP_WITH_UPLOAD_FILTER[0]}"], *steps, [f"pip=={PAPER_PIP}"]]
    assert "--uploaded-prior-to=2024-08-20T00:00:00+00:00" in installs[1]
    made = [i for i, run in enumerate(runs) if "-m venv /venv" in run]
    first_install = next(i for i, run in enumerate(runs) if run.startswith(pip))
    assert len(made) == 1 and "rm -rf /venv" in runs[made[0]] and made[0] < first_install


def test_an_entry_whose_host_does_not_answer_is_left_out_and_recorded() -> None:
    url = _closed_url("/spacy-models/en_core_web_sm-3.7.1-py3-none-any.whl")
    entries = ["spacy==3.7.4", f"en-core-web-sm @ {url}#sha256=00", "numpy==1.25.2"]
    said: list[str] = []
    kept, skipped = reachable_entries(entries, said.append)
    assert kept == ["spacy==3.7.4", "numpy==1.25.2"]
    assert skipped == {entries[1]: f"{url} does not answer"}
    assert said == [f"Left out en-core-web-sm: {url} does not answer"]


def test_the_image_gets_the_bases_interpreter_where_the_base_lacks_python_3_10(tmp_path: Path) -> None:
    said: list[str] = []
    # A base with SUPER's 3.10 keeps its own.
    assert _paper_python({"python": "python3.10", "version": "3.10.12"}, None, tmp_path, said.append) is None
    assert not (tmp_path / "python").exists()
    if sys.base_prefix in ("/", "/usr"):
        pytest.skip(f"this interpreter's prefix is {sys.base_prefix}, not an installation of its own")
    # --python names the interpreter to copy in: the layer puts it at /usr/local and makes /venv from it.
    host = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    found = {"version": "3.11.2", "apt": "yes"}  # a bare Debian: no python, apt to get the libraries
    staged = _paper_python(found, host, tmp_path, said.append)
    assert staged is not None and staged.version == ".".join(map(str, sys.version_info[:3]))
    assert said == [f"The image's Python: {staged.version}, copied from {staged.source} (as the other backends' base)"]
    lines = _system_layer("debian:bookworm-slim", found, staged)
    assert "COPY python /usr/local/" in lines and f"RUN {staged.inside} -m venv /venv" in lines
    apt = next(line for line in lines if "apt-get install" in line)
    assert " python3 " in apt and "python3-venv" not in apt  # Debian's python3 for the libraries it links to

"""The docker build's decisions, without building: the tags it gives (``--tag`` for every image, the
kernel-only layer's too) and where its torch comes from (the PyTorch CPU index asked once; where it does not
answer, the list without it and the fallback named)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from super_bench.sandbox.backends.container_image import DEFAULT_IMAGE, KERNEL_IMAGE, image_tags, torch_source
from super_bench.sandbox.pyenv.base_install import TORCH_CPU_INDEX
from super_bench.sandbox.pyenv.super_base import COLAB_REQUIREMENTS


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


def test_an_unreachable_pytorch_index_is_asked_once_and_left_out_of_the_list() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/whl/cpu"
    closed.close()  # nothing listens there: the connection is refused
    listed = COLAB_REQUIREMENTS.read_text().replace(TORCH_CPU_INDEX, url)
    said: list[str] = []
    torch, kept = torch_source(listed, said.append, url)
    assert torch == "pypi" and url not in kept
    assert "torch==2.2.1" in kept.splitlines() and len(kept.splitlines()) == len(listed.splitlines()) - 1
    assert said == [f"The PyTorch CPU index {url} does not answer: torch comes from PyPI (with CUDA libraries)"]


def test_a_reachable_pytorch_index_keeps_the_list_as_it_is() -> None:
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
        listed = COLAB_REQUIREMENTS.read_text().replace(TORCH_CPU_INDEX, url)
        assert torch_source(listed, print, url) == ("cpu", listed)
        assert asked == ["/whl/cpu"]  # once
    finally:
        server.shutdown()
        server.server_close()

"""One ZeroMQ frame far larger than anything a step keeps costs the harness nothing (docs/threat-model.md,
"Accounting"): agent code, which runs in the kernel, sends a frame backed by the shared zero page (charged to
neither its memory cgroup nor its data limit); the harness takes no frame over its limit on any channel, so the
connection is cut unread, the step ends at once with a message that says why, and the next step has a kernel."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment
from super_bench.environment.kernel.client import MAX_FRAME_BYTES, max_frame_bytes

GIANT_FRAME = """
import mmap, os
kernel = get_ipython().kernel
zeros = mmap.mmap(os.open('/dev/zero', os.O_RDONLY), 1 << 30, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
kernel.session.send(kernel.iopub_socket, 'stream', {'name': 'stdout', 'text': 'giant\\n'},
                    parent=kernel.get_parent(), buffers=[memoryview(zeros)])
import time
time.sleep(50)
print('the cell ran to its end')
"""


def _peak_growth(action: Any) -> tuple[Any, int]:
    status = Path("/proc/self/status")
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident size starts again from the current size

    def field(name: str) -> int:
        line = next(line for line in status.read_text().splitlines() if line.startswith(name + ":"))
        return int(line.split()[1]) * 1024

    before = field("VmRSS")
    result = action()
    return result, field("VmHWM") - before


@pytest.mark.parametrize("backend", ["bwrap", "local", "docker"])
def test_a_gigabyte_zero_page_frame_is_cut_unread_and_the_step_ends_with_why(env_factory: Any, backend: str) -> None:
    env: Environment = env_factory(sandbox=backend_settings(backend), cell_timeout=120)
    env.reset(make_task())
    started = time.monotonic()
    step, grew = _peak_growth(lambda: env.step(Action(type="execute", content=GIANT_FRAME)))
    took = time.monotonic() - started
    assert grew < 256 << 20, f"the harness grew by {grew >> 20} MiB for one frame"
    assert step.outcome == "kernel_died" and took < 40, (step.outcome, took)
    assert f"more than {max_frame_bytes(env.config.output_limit):,} bytes" in step.observation, step.observation
    assert "the cell ran to its end" not in step.observation
    after = env.step(Action(type="execute", content="print(6 * 7)"))
    assert after.outcome == "ok" and after.observation.strip().endswith("42"), after.observation


def test_the_frame_limit_follows_the_output_a_step_keeps() -> None:
    assert max_frame_bytes(1000) < 5 << 20  # the smallest output limit still takes the largest image kept
    assert max_frame_bytes(128_000_000) == MAX_FRAME_BYTES

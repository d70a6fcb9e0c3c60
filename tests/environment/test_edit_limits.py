"""The edit action never reads a whole file into the harness (docs/threat-model.md, "Accounting"): a file of more
than the edit limit is refused with a message that says what to do instead, and no more than the limit is ever
held by the harness, however large the file agent code made (a sparse gigabyte costs agent code nothing)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.support.helpers import make_task
from tests.support.sandboxes import backend_settings

from super_bench import Action, Environment
from super_bench.sandbox.base import FileTooLargeError, Sandbox


def _peak_rss_reset() -> None:
    # Writing 5 to clear_refs resets the process's peak resident size (VmHWM) to its current size.
    Path("/proc/self/clear_refs").write_text("5")


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _edit(env: Environment, path: str) -> Any:
    return env.step(Action(type="edit", content=f"{path}\n<<<BEFORE_EDIT>>>\nold = 1\n<<<AFTER_EDIT>>>\nnew = 2"))


@pytest.mark.parametrize("backend", ["bwrap", "local", "docker"])
def test_a_gigabyte_edit_costs_the_harness_little_and_is_refused_clearly(env_factory: Any, backend: str) -> None:
    env: Environment = env_factory(sandbox=backend_settings(backend), cell_timeout=60)
    env.reset(make_task())
    made = env.step(
        Action(
            type="execute",
            content="import os\nwith open('big.py', 'w') as f:\n    f.write('old = 1\\n')\n"
            "os.truncate('big.py', 1 << 30)\nprint(os.path.getsize('big.py'))",
        )
    )
    assert made.observation.strip() == str(1 << 30), made.observation
    _peak_rss_reset()
    before = _rss("VmRSS")
    step = _edit(env, "big.py")
    grew = _rss("VmHWM") - before
    assert step.outcome == "invalid", step.observation
    assert "big.py holds more than 4,194,304 bytes" in step.observation, step.observation
    assert "execute action" in step.observation  # what to do instead
    assert grew < 256 << 20, f"the harness grew by {grew >> 20} MiB for a refused edit"
    # The file is as it was, and a file within the limit is still edited.
    check = env.step(Action(type="execute", content="print(os.path.getsize('big.py'), open('big.py').readline())"))
    assert check.observation.split()[0] == str(1 << 30)
    env.step(Action(type="execute", content="open('small.py', 'w').write('old = 1\\n' * 1000)"))
    assert _edit(env, "small.py").outcome == "invalid"  # 1000 matches: the edit's own rule, not the size
    env.step(Action(type="execute", content="open('small.py', 'w').write('x = 0\\n' * 100_000 + 'old = 1\\n')"))
    done = _edit(env, "small.py")
    assert done.outcome == "ok", done.observation
    assert env.step(Action(type="execute", content="print(open('small.py').read()[-8:])")).observation == "new = 2\n\n"


PLANT = """
import os, stat
# Programs the harness once ran for an edit, planted first on PATH and over the image's own: each notes that it
# ran, then streams without end.
script = "#!/bin/sh\\necho ran >> /tmp/planted-ran\\nexec yes\\n"
for folder in ("/venv/bin", "/usr/local/bin"):
    for name in ("cat", "sh", "head", "tar", "wc", "mktemp", "dd"):
        with open(f"{folder}/{name}", "w") as f:
            f.write(script)
        os.chmod(f"{folder}/{name}", 0o755)
os.replace("/venv/bin/cat", "/usr/bin/cat")
open("/content/code.py", "w").write("old = 1\\n")
print("planted")
"""


def test_a_docker_edit_runs_no_program_agent_code_planted(env_factory: Any) -> None:
    env: Environment = env_factory(sandbox=backend_settings("docker"), cell_timeout=60)
    env.reset(make_task())
    assert env.step(Action(type="execute", content=PLANT)).observation.strip() == "planted"
    _peak_rss_reset()
    before = _rss("VmRSS")
    step = _edit(env, "/content/code.py")
    assert step.outcome == "ok", step.observation
    assert _rss("VmHWM") - before < 64 << 20
    check = "import os\nprint(open('/content/code.py').read(), os.path.exists('/tmp/planted-ran'))"
    assert env.step(Action(type="execute", content=check)).observation == "new = 2\n False\n"


@pytest.mark.parametrize(("size", "written"), [(10, True), (11, False)])
def test_the_default_edit_of_a_plug_in_refuses_a_file_past_the_limit(size: int, written: bool) -> None:
    """``Sandbox.edit_file`` as a plug-in inherits it, over a plug-in's own read and write."""
    files = {"f": b"x" * size}
    plug_in = SimpleNamespace(read_file=files.__getitem__, write_file=files.__setitem__)
    if written:
        Sandbox.edit_file(plug_in, "f", lambda data: b"changed", limit=10)  # type: ignore[arg-type]
        assert files["f"] == b"changed"
    else:
        with pytest.raises(FileTooLargeError, match="f holds more than 10 bytes, the most an edit reads"):
            Sandbox.edit_file(plug_in, "f", lambda data: b"changed", limit=10)  # type: ignore[arg-type]
        assert files["f"] == b"x" * 11

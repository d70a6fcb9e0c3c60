"""What the agent is told lives in one module (`messages`); why a kernel died is said for any exit status."""

from __future__ import annotations

import ast
import signal
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from super_bench import messages

SRC = Path(__file__).resolve().parents[2] / "src" / "super_bench"


def test_no_note_for_the_agent_is_written_outside_the_messages_module() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "messages.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "[super-bench" in node.value:
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == [], "write the note in super_bench/messages.py:\n" + "\n".join(found)


@given(st.one_of(st.none(), st.integers(-200, 300)), st.booleans(), st.one_of(st.none(), st.integers(1, 2**45)))
def test_why_a_kernel_died_is_said_for_any_exit_status(status: int | None, oom: bool, limit: int | None) -> None:
    cause = messages.death_cause(status, out_of_memory=oom, memory_limit=limit)
    if oom:
        assert cause.startswith("killed for going over the task's memory limit of ") and cause.endswith("out of memory")
    elif status is None:
        assert cause == "stopped responding and was killed"
    elif status >= 0:
        assert cause == f"exited with status {status}"
    else:
        names = {s.value: s.name for s in signal.Signals}
        assert cause.startswith(f"killed by signal {names.get(-status, -status)}")
        assert cause.endswith("often a sign of running out of memory") == (status == -signal.SIGKILL)


def test_a_kernel_that_could_not_be_replaced_says_both() -> None:
    failed = messages.no_new_kernel("no room")
    note = messages.kernel_died("exited with status 3", restart_failed=failed, log="last line")
    assert note == (
        "\n[super-bench] The kernel died (exited with status 3).\n"
        "[super-bench] The kernel was stopped, and no new kernel could be started: no room\n"
        "[super-bench] The episode ends here: what was done in this notebook left it unable to run code.\n"
        "Last lines of the kernel's log:\nlast line"
    )
    assert "A new kernel was started" in messages.kernel_died("exited with status 3")

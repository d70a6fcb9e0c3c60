"""`super-bench play` at a real terminal (a pseudo-terminal that is the command's controlling terminal, so
that Ctrl-C is the terminal's own SIGINT): a running cell's output appears as it comes, before the cell
ends; Ctrl-C interrupts the cell; two at the prompt quit, and `play` then exits with status 130, the
episode saved and scored."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from super_bench.agents.human import _to_terminal

STYLES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A command in a pseudo-terminal of its own, and what it showed so far."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.controller, terminal = os.openpty()
        env = {**os.environ, "COLUMNS": "100", "LINES": "50", "TERM": "xterm"}
        self.process = subprocess.Popen(
            args,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            env=env,
            cwd=cwd,
            start_new_session=True,
            # The terminal becomes the new session's controlling one; the child runs no thread before exec.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509
        )
        os.close(terminal)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.controller, text.encode())

    def wait_for(self, pattern: str, after: int = 0) -> int:
        """Read until ``pattern`` (a regex) shows after offset ``after`` of what was seen; its end offset."""
        deadline = time.monotonic() + 300
        while (found := re.compile(pattern).search(self.seen, after)) is None:
            assert time.monotonic() < deadline and self.process.poll() is None, self.seen
            try:
                chunk = os.read(self.controller, 65536)
            except OSError:
                chunk = b""
            self.seen += STYLES.sub("", chunk.decode(errors="replace")).replace("\r\n", "\n")
        return found.end()

    def close(self) -> int:
        """The command's exit status, once it ended and all it showed was read."""
        try:
            while chunk := os.read(self.controller, 65536):
                self.seen += STYLES.sub("", chunk.decode(errors="replace")).replace("\r\n", "\n")
        except OSError:  # the command ended and closed the terminal
            pass
        os.close(self.controller)
        return self.process.wait(timeout=120)


@pytest.mark.slow
def test_play_streams_a_running_cell_and_a_ctrl_c_quit_fails(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "super_bench", "play", "tinyreg", "--cell-timeout", "900", "--out", str(out)]
    terminal = Terminal(command, tmp_path)
    try:
        start = terminal.wait_for(r"\[1\]>>> ")
        terminal.type(":cell\nimport time\nprint('first line', flush=True)\ntime.sleep(600)\nprint('never')\n:end\n")
        shown = terminal.wait_for(r"first line\n", start)
        # The cell's first line is on the screen while the cell still runs: no prompt for the next one yet.
        assert "[2]>>>" not in terminal.seen and terminal.process.poll() is None
        time.sleep(1)  # a person presses Ctrl-C after reading the line, not within the same millisecond
        terminal.type("\x03")  # Ctrl-C interrupts the cell, as in Jupyter
        prompt = terminal.wait_for(r"\[2\]>>> ", shown)
        assert "KeyboardInterrupt" in terminal.seen[shown:prompt] and "(interrupted)" in terminal.seen[shown:prompt]
        assert "\nnever\n" not in terminal.seen[shown:]  # the cell was stopped before its last line
        terminal.type("\x03")
        terminal.wait_for(r"Ctrl-C again to stop", prompt)
        terminal.type("\x03")
        terminal.wait_for(r"Run directory: ")
    except BaseException:
        terminal.process.kill()
        raise
    assert terminal.close() == 130, terminal.seen  # read to its end, then waited for
    assert "stopped by Ctrl-C" in terminal.seen and "Traceback" not in terminal.seen.split("Stopping")[1]
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["stop_reason"] == "cancelled"  # kept and scored, not lost
    assert terminal.seen.count("first line\n") == 1  # streamed, not shown a second time when the step ended


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200) | st.sampled_from(["\x1b]0;title\x07", "\x9b2J"]))
def test_streamed_output_obeys_no_control_but_the_carriage_return(text: str) -> None:
    written: list[str] = []

    class Terminal:
        def write(self, part: str) -> None:
            written.append(part)

        def flush(self) -> None:
            pass

    real = sys.stdout
    sys.stdout = Terminal()  # type: ignore[assignment]
    try:
        _to_terminal(text)
    finally:
        sys.stdout = real
    shown = "".join(written)
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", shown), repr(shown)
    if "\x1b" not in text:  # (an escape sequence removed may have held one)
        assert shown.count("\r") == text.count("\r")  # a progress bar still redraws its line


# The prompt's reader in a terminal of its own; ``pressed`` sends the process SIGINT the first time it is asked, so
# the key lands after the reader's check and before its wait: the moment a blocking ``input`` would lose it.
_READER = """
import os, signal, sys
from super_bench.agents.human import _Keyboard
keys = []
signal.signal(signal.SIGINT, lambda signum, frame: keys.append(signum))
asked = []
def pressed():
    asked.append(1)
    if len(asked) == 1:
        os.kill(os.getpid(), signal.SIGINT)
        return False
    return bool(keys and keys.pop())
try:
    _Keyboard(pressed)("ready> ")
except KeyboardInterrupt:
    print("answered")
print("line:", _Keyboard(lambda: False)("again> "), flush=True)
"""


def test_a_ctrl_c_just_before_the_prompt_waits_is_answered_at_once_and_a_line_still_reads(tmp_path: Path) -> None:
    terminal = Terminal([sys.executable, "-c", _READER], tmp_path)
    try:
        terminal.wait_for(r"answered\n")  # no line was typed: the key alone ended the first read
        terminal.type("typed\n")
        terminal.wait_for(r"line: typed\n")
    except BaseException:
        terminal.process.kill()
        raise
    assert terminal.close() == 0, terminal.seen

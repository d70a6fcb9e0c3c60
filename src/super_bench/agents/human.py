"""The human agent: a person at the terminal plays the task (``super-bench play TASK_ID``).

Type a cell and press Enter: a line that is complete Python, a ``!command`` or a ``%magic`` runs
at once; an unfinished Python block (and a ``%%cell`` magic) continues until an empty line.
Commands start with a colon:

    :edit           then the edit (path, <<<BEFORE_EDIT>>>, ..., <<<AFTER_EDIT>>>, ...), ended by :end
    :cell           a cell of several lines, ended by :end
    :submit JSON    submit the answer, e.g. :submit {"accuracy": 0.81}
    :wait           keep waiting for a cell that is still running
    :interrupt      interrupt it
    :note TEXT      a note, recorded as the thought of the next action
    :quit           stop without submitting
    :help           this list

A running cell's output is shown as it comes, as in Jupyter. Ctrl-C interrupts the running cell;
at the prompt, a second Ctrl-C in a row stops without submitting (the episode is saved and scored,
and ``play`` exits with status 130).

The episode is recorded, saved and scored like any agent's, which is how benchmark builders
record and check gold solutions.
"""

from __future__ import annotations

import codeop
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from super_bench.actions import Action
from super_bench.agents.base import AgentOptions, refuse_model
from super_bench.environment.kernel.output import strip_ansi
from super_bench.errors import AgentError
from super_bench.messages import NOTE
from super_bench.terminal import defang, wrapped

if TYPE_CHECKING:
    from super_bench.environment import AgentEnv
    from super_bench.trajectory import Step

HELP = (__doc__ or "").split("Commands start with a colon:")[1].split("The episode")[0].strip("\n")


def _to_terminal(text: str) -> None:
    """Output as it comes, to the terminal: without ANSI styles (as the observation has it), its control
    characters shown, not obeyed, but the carriage return a progress bar redraws its line with."""
    sys.stdout.write("\r".join(defang(part) for part in strip_ansi(text).split("\r")))
    sys.stdout.flush()


class _Keyboard:
    """Reads the player's lines from standard input, ``input``-like, and raises ``KeyboardInterrupt`` once
    ``pressed()`` says Ctrl-C came.

    While ``play`` runs, SIGINT's handler only notes the key (an exception raised wherever the signal
    lands could cut the episode's saving short). ``input`` would not wake for that: it blocks in its read,
    and a handler that does not raise lets the read go on. So the signal also writes a byte to a pipe
    (``signal.set_wakeup_fd``) waited on with the input: a key pressed just before the wait wakes it at
    once, one pressed during it too."""

    def __init__(self, pressed: Callable[[], bool]) -> None:
        self._pressed = pressed
        self._pending = b""  # read past the last line given (a pipe gives several lines a read)

    def __call__(self, prompt: str) -> str:
        if threading.current_thread() is not threading.main_thread():
            return input(prompt)  # (signals reach the main thread only)
        sys.stdout.write(prompt)
        sys.stdout.flush()
        woken, wake = os.pipe()
        os.set_blocking(wake, False)
        previous = signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
        try:
            while b"\n" not in self._pending:
                if self._pressed():
                    raise KeyboardInterrupt
                ready, _, _ = select.select([0, woken], [], [])
                if woken in ready:
                    os.read(woken, 512)  # a signal came: its handler has run, or runs before the check above
                    continue
                chunk = os.read(0, 65536)
                if not chunk:  # end of input
                    if not self._pending:
                        raise EOFError
                    self._pending += b"\n"
                self._pending += chunk
        finally:
            signal.set_wakeup_fd(previous)
            os.close(woken)
            os.close(wake)
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode(errors="replace")


def _complete(source: str) -> bool:
    """Whether a cell is finished: shell and magic lines are; Python is when it compiles (or cannot)."""
    first = source.lstrip()
    if first.startswith("%%"):
        return False
    if first.startswith(("!", "%")) and "\n" not in source:
        return True
    try:
        return codeop.compile_command(source, "<cell>", "single") is not None
    except (SyntaxError, ValueError, OverflowError):
        return True  # the kernel will report the error


@contextmanager
def _ctrl_c_interrupts(env: AgentEnv) -> Iterator[None]:
    """While a step runs, Ctrl-C interrupts the cell instead of ending the episode (only the main thread
    receives signals: with the agent in another, Ctrl-C keeps its usual meaning)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        env.request_interrupt()

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class HumanAgent:
    name = "human"

    def __init__(
        self,
        arg: str | None = None,
        options: AgentOptions | None = None,
        *,
        read: Callable[[str], str] | None = None,
        write: Callable[[str], Any] = print,
        stream: Callable[[str], Any] | None = _to_terminal,
    ) -> None:
        """``read`` reads a line after a prompt (default: the terminal); ``write`` shows a line; ``stream``
        a running cell's output as it comes (None: shown when the step ends, whole)."""
        if arg:
            raise AgentError("the human agent takes no argument")
        refuse_model("human", options)
        self.read = read or _Keyboard(self._take_ctrl_c)
        self.write = write
        self._ctrl_c = False  # Ctrl-C was pressed outside a running cell, and no prompt has answered it yet
        self.stream = stream
        self._streamed: list[str] = []

    def _streaming(self, text: str) -> None:
        self._streamed.append(text)
        if self.stream is not None:
            self.stream(text)

    def _take_ctrl_c(self) -> bool:
        pressed, self._ctrl_c = self._ctrl_c, False
        return pressed

    @contextmanager
    def _ctrl_c_noted(self) -> Iterator[None]:
        """Outside a running cell, Ctrl-C is noted and answered at the prompt (``KeyboardInterrupt`` from
        the read), never raised half-way through showing or saving a step."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def note(signum: int, frame: FrameType | None) -> None:
            self._ctrl_c = True

        previous = signal.signal(signal.SIGINT, note)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _prompt(self, prompt: str) -> str:
        if self._take_ctrl_c():
            raise KeyboardInterrupt
        return self.read(prompt)

    def run(self, env: AgentEnv) -> None:
        with self._ctrl_c_noted():
            self._play(env)

    def _play(self, env: AgentEnv) -> None:
        task = env.task
        # Wrapped here, at word boundaries, since the terminal would cut the words at its edge.
        self.write(wrapped(f"Task {task.task_id} ({task.task_set}):\n{task.query}\n", sys.stdout))
        for step in env.trajectory.steps:
            self.write(f"[run before you started]\n{step.action.content}\n{step.observation}")
        self.write(f"Type a cell, or a command (:help lists them).\n{HELP}\n")
        note: str | None = None
        interrupted = False  # the last prompt ended with Ctrl-C
        if self.stream is not None:
            env.on_output = self._streaming
        while not env.done:
            try:
                action = self._next(env)
            except EOFError:
                self.write("\nEnd of input: stopping without a submission.")
                return
            except KeyboardInterrupt:
                if interrupted:
                    self.write("\nStopping without a submission.")
                    env.stop("cancelled")  # the player's Ctrl-C, which `play` answers with a failing status
                    return
                interrupted = True
                self.write("\n(Ctrl-C again to stop without submitting, or type a cell)")
                continue
            interrupted = False
            if action is None:
                return
            if isinstance(action, str):
                note = action
                continue
            self._streamed.clear()
            with _ctrl_c_interrupts(env):
                step = env.step(action, thought=note)
            self._show(env, step, "".join(self._streamed))
            note = None

    def _next(self, env: AgentEnv) -> Action | str | None:
        """The next action, a note (str), or None to stop."""
        while True:
            line = self._prompt(f"[{len(env.trajectory.agent_steps) + 1}]>>> ")
            command, _, rest = line.strip().partition(" ")
            if not line.startswith(":"):
                if not line.strip():
                    continue
                return Action.execute(self._more(line))
            if command == ":help":
                self.write(HELP)
            elif command == ":quit":
                return None
            elif command == ":note":
                return rest
            elif command == ":submit":
                return Action.submit(rest or "null")
            elif command == ":wait":
                return Action(type="continue_wait")
            elif command == ":interrupt":
                return Action(type="interrupt")
            elif command in (":edit", ":cell"):
                lines = []
                while (more := self._prompt("... ")).strip() != ":end":
                    lines.append(more)
                return Action(type="edit" if command == ":edit" else "execute", content="\n".join(lines))
            else:
                self.write(f"Unknown command {command}; :help lists the commands.")

    def _more(self, first: str) -> str:
        """Continuation lines of an unfinished cell, up to an empty line."""
        lines = [first]
        while not _complete("\n".join(lines)):
            line = self._prompt("... ")
            if not line.strip():
                break
            lines.append(line)
        return "\n".join(lines)

    def _show(self, env: AgentEnv, step: Step, streamed: str) -> None:
        if streamed:
            # The output was shown as it came: only the harness's notes on it remain to be shown.
            if not streamed.endswith("\n"):
                self.write("")
            for line in step.observation.splitlines():
                if line.startswith(NOTE):
                    self.write(line)
        elif step.observation:
            self.write(step.observation.rstrip("\n"))
        if step.outcome not in ("ok", "error"):
            self.write(f"({step.outcome})")
        if env.done:
            self.write(f"\nThe episode is over: {env.trajectory.stop_reason}.")

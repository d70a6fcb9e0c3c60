"""One Jupyter kernel per task, spoken to directly through ``jupyter_client``.

No Jupyter server sits in between, so nothing rate-limits or drops large outputs. Every
wait is sliced: between slices the kernel process is checked, so a dead kernel is noticed
within a fraction of a second and no call can hang.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from queue import Empty
from typing import Any, Literal, NoReturn

import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.connect import channel_socket_types

from super_bench import messages
from super_bench.environment.kernel.output import OutputBuffer
from super_bench.environment.kernel.spill import Spilled, SpillFolder
from super_bench.errors import KernelError
from super_bench.sandbox import KernelProcess, Sandbox
from super_bench.trajectory import Figure

CellState = Literal["ok", "error", "running", "died"]

# Run in the kernel at start-up: reset ``_exit_code`` before every cell, so the value read back
# after a cell is that cell's own last ``!command`` status (None when it ran none).
_EXEC_LINES = [
    "get_ipython().events.register('pre_run_cell', lambda *_: get_ipython().user_ns.__setitem__('_exit_code', None))"
]
_USER_EXPRESSIONS = {"exit_code": "_exit_code", "cwd": "__import__('os').getcwd()"}

# Images kept from display outputs, in order of preference; others are shown by their text only.
FIGURE_TYPES = ("image/png", "image/jpeg")
# The largest image kept (base64 characters): a matplotlib figure is tens of kilobytes.
MAX_FIGURE_CHARS = 4_000_000
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# IOPub messages the harness's ZeroMQ socket holds before it stops reading from the kernel: of stream output,
# in the kernel's pieces of 64 KiB, at most about 2 MiB.
IOPUB_QUEUE = 32
# The largest ZeroMQ frame the harness takes from a kernel, on every channel. Agent code runs in the kernel and
# can send one frame of any size (backed by the shared zero page, it costs the task nothing); taking it in
# costs the harness its size twice over before a signature is checked. A larger frame cuts the connection
# instead (ZMQ_MAXMSGSIZE), unread. Below this, a frame is held to what a step can keep (``max_frame_bytes``).
MAX_FRAME_BYTES = 32 << 20


@dataclass
class CellResult:
    """What a cell produced since it started, or since the last result for the same cell: its output as text,
    or in a file where it was too long to hold (``kernel.spill``)."""

    output: str | Spilled
    state: CellState
    exit_code: int | None = None
    error_name: str | None = None
    interrupted: bool = False
    figures: list[Figure] = field(default_factory=list)
    dropped: int = 0  # characters of output left out: the middle of a flood, images not kept


@dataclass
class _RunningCell:
    msg_id: str
    buffer: OutputBuffer
    # IPython runs nothing for an empty or blank cell (no pre_run_cell event resets `_exit_code`),
    # so such a cell has no exit status of its own.
    runs_code: bool = True
    error_name: str | None = None
    interrupted: bool = False
    figures: list[Figure] = field(default_factory=list)
    figure_chars: int = 0
    figures_dropped: int = 0  # base64 characters of images not kept
    lost: int | None = None  # characters of output let go when holding them raised MemoryError (or OSError)
    lost_to: OSError | None = None  # the error writing its file raised, where that was the cause
    echo: Callable[[str], None] | None = None  # shown each piece of output as it arrives (play's terminal)

    def add(self, text: str) -> None:
        """Append to the output (and show it, where ``echo`` is set); once holding it has raised ``MemoryError``,
        only count it."""
        if self.echo is not None:
            self.echo(text)
        if self.lost is not None:
            self.lost += len(text)
            return
        try:
            self.buffer.append(text)
        except MemoryError:
            self._lose(len(text))
        except OSError as e:  # writing the output's file: a full disk, say
            self._lose(len(text), e)

    def _lose(self, more: int, error: OSError | None = None) -> None:
        """Let the output go after a ``MemoryError`` (or an ``OSError`` writing its file): the step ends with an
        error that says so."""
        self.lost = len(self.buffer) + more
        self.lost_to = error
        self.buffer.clear()
        self.error_name = self.error_name or ("MemoryError" if error is None else "OSError")

    def keep_figure(self, data: dict[str, Any]) -> None:
        """Keep the image of a display output, if it has one that fits; else say in the text why not."""
        mime = next((m for m in FIGURE_TYPES if isinstance(data.get(m), str)), None)
        if mime is None:
            return
        encoded: str = data[mime]
        size = len(encoded)
        if size > MAX_FIGURE_CHARS or self.figure_chars + size + len(self.buffer) > self.buffer.max_chars:
            self.figures_dropped += size
            self.add(messages.image_too_large(mime, size, MAX_FIGURE_CHARS))
            return
        encoded = "".join(encoded.split())  # base64 may come in lines
        if not _BASE64.fullmatch(encoded):
            self.add(messages.image_not_base64(mime))
            return
        self.figures.append(Figure(mime=mime, data=encoded))
        self.figure_chars += size

    def result(self, state: CellState, exit_code: int | None = None) -> CellResult:
        """What the cell produced since the last result; the next result starts afresh."""
        # Joined once (a cell's output may be 100 MB), its blocks let go as soon as it is; or its file finished.
        text: str | Spilled = ""
        if self.lost is None:
            try:
                text = self.buffer.finish()
            except MemoryError:
                self._lose(0)
            except OSError as e:
                self._lose(0, e)
        if self.lost is not None:
            lost, error = self.lost, self.lost_to
            text = messages.output_out_of_memory(lost) if error is None else messages.output_not_written(lost, error)
            self.figures, self.buffer.dropped, self.lost, self.lost_to = [], lost, None, None
            state = "error" if state == "ok" else state  # a finished cell's step ends with the error
        dropped, figures = self.buffer.dropped + self.figures_dropped, self.figures
        self.buffer.clear()
        self.figures, self.figure_chars, self.figures_dropped = [], 0, 0
        return CellResult(
            text,
            state,
            exit_code=exit_code if self.runs_code else None,
            error_name=self.error_name,
            interrupted=self.interrupted,
            figures=figures,
            dropped=dropped,
        )


def max_frame_bytes(output_chars: int) -> int:
    """The largest frame taken from a kernel whose step keeps ``output_chars`` characters: what JSON can spell
    them in (six bytes for an escaped character) with room for the largest image kept, at most
    ``MAX_FRAME_BYTES``."""
    return min(MAX_FRAME_BYTES, 6 * output_chars + MAX_FIGURE_CHARS + (64 << 10))


class _Client(BlockingKernelClient):
    """A kernel client that queues few IOPub messages: the rest wait in the kernel (which drops none, see
    ``kernel_boot``), not in the harness's memory, when output comes faster than the harness reads it; that
    takes no frame larger than ``max_frame`` on any channel, and watches its IOPub connection for the cut a
    larger frame makes (``cut``)."""

    def __init__(self, max_frame: int) -> None:
        super().__init__()
        self.max_frame = max_frame
        self._monitor: zmq.Socket[bytes] | None = None

    def _create_connected_socket(self, channel: str, identity: bytes | None = None) -> zmq.Socket[bytes]:
        # jupyter_client's own connects before an option could be set; options are a connection's from its
        # start. The connection files the sandboxes write carry no CURVE keys, so none are set here.
        socket: zmq.Socket[bytes] = self.context.socket(channel_socket_types[channel])
        socket.linger = 1000
        socket.maxmsgsize = self.max_frame
        if channel == "iopub":
            socket.rcvhwm = IOPUB_QUEUE
            self._monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        if identity:
            socket.identity = identity
        socket.connect(self._make_url(channel))
        return socket

    def cut(self) -> bool:
        """Whether the IOPub connection was cut since the last call: a frame over the limit, or the kernel
        closing it (it died, or agent code closed it). Messages sent meanwhile are lost."""
        monitor = self._monitor
        if monitor is None or not monitor.poll(0):
            return False
        while monitor.poll(0):
            monitor.recv_multipart()
        return True

    def stop_channels(self) -> None:
        if self._monitor is not None:
            if self.iopub_channel.socket is not None:
                self.iopub_channel.socket.disable_monitor()
            self._monitor.close(linger=0)
            self._monitor = None
        super().stop_channels()


class NotebookKernel:
    """A stateful IPython kernel inside a sandbox, with soft timeouts and death detection."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        max_output_chars: int,
        startup_timeout: float,
        interrupt_grace: float,
        poll_interval: float = 0.2,
    ) -> None:
        """The limits are the environment's (``EnvConfig``: output_limit, startup_timeout, interrupt_grace)."""
        self.sandbox = sandbox
        self.max_output_chars = max_output_chars
        self.startup_timeout = startup_timeout
        self.interrupt_grace = interrupt_grace
        self.poll_interval = poll_interval
        self.cwd: str | None = None
        self.restarts = 0
        self._process: KernelProcess | None = None
        self._client: _Client | None = None
        self._cell: _RunningCell | None = None
        # Names a new file for a cell's output too long to hold in memory (``kernel.spill``); None: held in memory.
        self.spill: SpillFolder | None = None
        # Called with each piece of a cell's output as the kernel sends it (streams, displays, errors), in
        # the thread that runs or waits for the cell: a terminal shows a long cell's progress as Jupyter does.
        self.on_output: Callable[[str], None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        # parent_handle=1: no parent poller (the sandbox ties the kernel's life to the harness), and no
        # "how to connect" banner in the kernel's log, whose tail the agent sees when the kernel dies.
        args = [f"--IPKernelApp.exec_lines={json.dumps(_EXEC_LINES)}", "--IPKernelApp.parent_handle=1"]
        try:
            launch = self.sandbox.launch_kernel(args, self.startup_timeout)
        except KernelError as e:
            self._fail_start(str(e))
        self._process = launch.process
        client = _Client(max_frame_bytes(self.max_output_chars))
        client.load_connection_info(launch.connection)  # type: ignore[arg-type]  # a TypedDict of the same keys
        # No heartbeat channel: the kernel's process is watched directly (a thread with an event loop of its own
        # that pinged the kernel every few seconds, for nothing).
        client.start_channels(hb=False)
        self._client = client
        self._wait_ready()
        self.cwd = self.sandbox.workdir

    def _wait_ready(self) -> None:
        client = self._require_client()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            msg_id = client.kernel_info()
            reply_by = time.monotonic() + 1.0
            while time.monotonic() < reply_by:
                self._check_started()
                try:
                    reply = client.shell_channel.get_msg(timeout=self.poll_interval / 2)
                except Empty:
                    continue
                if reply["parent_header"].get("msg_id") != msg_id:
                    continue
                # The reply proves the shell socket works; a status message proves IOPub is
                # subscribed, without which the first cell's output could be lost.
                try:
                    client.iopub_channel.get_msg(timeout=0.5)
                    return
                except Empty:
                    break
        self._fail_start(f"the kernel did not answer within {self.startup_timeout:.0f} s")

    def _check_started(self) -> None:
        status = self._process.poll() if self._process else None
        if status is not None:
            self._fail_start(f"the kernel exited during start-up with status {status}")

    def _fail_start(self, reason: str) -> NoReturn:
        log = self.sandbox.kernel_log_tail()
        self.shutdown()
        detail = f"\nkernel log:\n{log.strip()}" if log.strip() else ""
        raise KernelError(f"{reason}{detail}")

    def restart(self) -> None:
        """Kill the kernel and start a fresh one; all Python state is lost."""
        self.shutdown()
        self.restarts += 1
        self.start()

    def shutdown(self) -> None:
        if self._client is not None:
            self._client.stop_channels()
            self._client = None
        if self._process is not None:
            self._process.kill()
            self._process = None
        self._cell = None

    def kill(self) -> None:
        """Kill the kernel's processes now. Safe to call from another thread while a cell runs: that
        cell then ends as ``died``."""
        process = self._process
        if process is not None:
            process.kill()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def exit_status(self) -> int | None:
        return self._process.poll() if self._process else None

    def set_output_limit(self, chars: int) -> None:
        """Keep at most ``chars`` characters of output (text and images) in the next result, the
        running cell's included."""
        self.max_output_chars = chars
        if self._cell is not None:
            self._cell.buffer.max_chars = chars

    @property
    def running(self) -> bool:
        """A cell is still executing (its soft timeout expired before it finished)."""
        return self._cell is not None

    def log_tail(self) -> str:
        return self.sandbox.kernel_log_tail()

    def _require_client(self) -> _Client:
        if self._client is None:
            raise KernelError("the kernel is not running")
        return self._client

    # -- cells ---------------------------------------------------------------------------------
    def execute(self, code: str, timeout: float) -> CellResult:
        """Run a cell; return when it finishes, the kernel dies, or ``timeout`` seconds pass."""
        if self._cell is not None:
            raise KernelError("a cell is still running; wait for it or interrupt it first")
        client = self._require_client()
        msg_id = client.execute(code, store_history=True, allow_stdin=False, user_expressions=_USER_EXPRESSIONS)
        buffer = OutputBuffer(self.max_output_chars, self.spill)
        self._cell = _RunningCell(msg_id, buffer, runs_code=bool(code.strip()))
        return self._collect(time.monotonic() + timeout)

    def wait(self, timeout: float) -> CellResult:
        """Keep waiting for the running cell; returns the output produced since the last result."""
        if self._cell is None:
            raise KernelError("no cell is running")
        return self._collect(time.monotonic() + timeout)

    def request_interrupt(self) -> None:
        """Ask the kernel to interrupt the running cell and return at once; the cell's result goes to whoever
        waits for it. Safe from a signal handler (Ctrl-C in ``play``); does nothing when no cell runs."""
        client = self._client
        if self._cell is None or client is None:
            return
        self._cell.interrupted = True
        client.control_channel.send(client.session.msg("interrupt_request", {}))

    def interrupt(self) -> CellResult:
        """Interrupt the running cell (SIGINT to the kernel's process group, via the control channel).

        If the cell ignores the interrupt for ``interrupt_grace`` seconds, the kernel is killed
        and the result's state is ``died``.
        """
        if self._cell is None:
            raise KernelError("no cell is running")
        client = self._require_client()
        self._cell.interrupted = True
        client.control_channel.send(client.session.msg("interrupt_request", {}))
        result = self._collect(time.monotonic() + self.interrupt_grace)
        if result.state == "running":
            self.shutdown()
            result.state = "died"
        return result

    def _collect(self, deadline: float) -> CellResult:
        cell = self._cell
        client = self._require_client()
        assert cell is not None
        cell.echo = self.on_output
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return cell.result("running")
            try:
                msg = client.iopub_channel.get_msg(timeout=min(self.poll_interval, remaining))
            except Empty:
                if not self.alive:
                    self._cell = None
                    return cell.result("died")
                if self._cut_off(client):
                    cell.buffer.append(messages.kernel_frame_too_large(client.max_frame))
                    self._cell = None
                    return cell.result("died")
                continue
            if msg["parent_header"].get("msg_id") != cell.msg_id:
                continue  # left over from an earlier, interrupted cell
            if self._handle(cell, msg["msg_type"], msg["content"]):
                self._cell = None
                reply = self._reply(cell.msg_id)
                return cell.result("error" if cell.error_name else "ok", reply.get("exit_code"))

    @staticmethod
    def _handle(cell: _RunningCell, msg_type: str, content: dict[str, Any]) -> bool:
        """Fold one IOPub message into the cell's output; True when the cell is finished.

        Agent code runs in the kernel and can send messages of its own making, so nothing here
        trusts a field's type."""
        if msg_type == "stream":
            text = content.get("text")
            if isinstance(text, str):
                cell.add(text)
        elif msg_type in ("execute_result", "display_data"):
            data = content.get("data")
            data = data if isinstance(data, dict) else {}
            text = data.get("text/plain")
            if not isinstance(text, str):
                kinds = ", ".join(sorted(map(str, data))) or "empty"
                text = f"<display output: {kinds}>"
            # The text first: a figure's is `<Figure size 640x480 with 1 Axes>`, as a notebook shows it.
            cell.add(text if text.endswith("\n") else text + "\n")
            cell.keep_figure(data)
        elif msg_type == "error":
            cell.error_name = str(content.get("ename") or "Error")
            traceback = content.get("traceback")
            lines = traceback if isinstance(traceback, list) else []
            cell.add("\n".join(map(str, lines)) + "\n")
        elif msg_type == "status":
            return bool(content.get("execution_state") == "idle")
        return False

    def _cut_off(self, client: _Client) -> bool:
        """Whether the kernel's output channel was cut while the kernel lives: then output was lost (the end of
        the cell's among it), and the kernel is killed, so the step ends now rather than at its timeout."""
        if not client.cut():
            return False
        # A dying kernel closes its sockets before its process is gone: give it a moment to be seen dead.
        deadline = time.monotonic() + 1.0
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self.alive:
            return False
        self.kill()
        return True

    def _reply(self, msg_id: str) -> dict[str, Any]:
        """The cell's execute_reply: its exit code and the working directory it left behind."""
        client = self._require_client()
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                reply = client.shell_channel.get_msg(timeout=0.5)
            except Empty:
                if not self.alive:
                    break
                continue
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            found: dict[str, Any] = {}
            expressions = reply["content"].get("user_expressions") or {}
            cwd = _expression_value(expressions.get("cwd"))
            if isinstance(cwd, str):
                self.cwd = cwd
            code = _expression_value(expressions.get("exit_code"))
            if isinstance(code, int):
                found["exit_code"] = code
            return found
        return {}


def _expression_value(result: dict[str, Any] | None) -> Any:
    """Decode a user_expressions entry (the repr of a str, int or None) into its value."""
    if not result or result.get("status") != "ok":
        return None
    try:
        return ast.literal_eval(result.get("data", {}).get("text/plain", "None"))
    except (ValueError, SyntaxError):
        return None

"""Starts a notebook kernel whose machinery is kept apart from the packages of the task it serves.

Run as ``python -S kernel_boot.py -f CONNECTION_FILE [ipykernel options]`` with the task's own
interpreter. The kernel's packages (ipykernel, IPython, traitlets, tornado, pyzmq, ...) come from
the ``packages`` directory beside this file and are all imported before the task's site-packages
are even on ``sys.path``, so nothing the agent installed can break the kernel.

Then the task's site-packages are added. Where the task has a copy of a package the kernel uses
(the agent pinned an old traitlets, say), both live on: ``sys.modules`` keeps the kernel's, which
the kernel's code keeps using however it imports, and an ``__import__`` hook gives code outside
the kernel's packages (notebook cells, the task's own modules) the task's copy, kept aside while
the kernel's is in place. So whatever the agent installs (any typing_extensions, traitlets,
tornado, pyzmq, even ipykernel), the kernel restarts, and user code sees the versions the agent
installed, but for the packages cells talk to the running notebook through (``NOTEBOOK``: IPython,
ipykernel, comm, matplotlib-inline), which are always the kernel's, so that ``display()`` and
figures work. Where the task has no copy of a package, the kernel's is shared.

Shell escapes (``!command``) run as IPython runs them, in a pseudo-terminal through pexpect, but
without the tenth of a second pexpect sleeps when it closes a child's terminal (``run_shell``).
Output is sent in stream messages of at most ``STREAM_PIECE`` characters (``_split_stream_messages``).

This file is standalone on purpose: it runs in the task's interpreter, where the harness's own
packages are not installed.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import time
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = os.path.join(HERE, "packages")
_PREFIX = PACKAGES + os.sep

# What cells talk to the running notebook through (display(), get_ipython(), figures, comms): always the
# kernel's own, since a second copy would have no running shell to talk to.
NOTEBOOK = {"IPython", "ipykernel", "comm", "matplotlib_inline"}
# Top-level names of the kernel's packages that the task has a copy of. For each, sys.modules holds
# one owner's modules (the kernel's, but while the task's are being imported); the other owner's wait here.
_shadowed: set[str] = set()
_set_aside: dict[str, dict[str, dict[str, Any]]] = {"kernel": {}, "task": {}}
_in_place: dict[str, str] = {}  # top -> "task" while the task's modules are in sys.modules
# Held while the modules of a top-level name are being swapped or imported.
_lock = threading.RLock()
_import = builtins.__import__


def _from_kernel(importer: dict[str, Any]) -> bool:
    origin = importer.get("__file__")
    return isinstance(origin, str) and origin.startswith(_PREFIX)


def _routed_import(
    name: str,
    globals: dict[str, Any] | None = None,  # the names builtins.__import__ gives them
    locals: Any = None,
    fromlist: Any = (),
    level: int = 0,
) -> Any:
    __tracebackhide__ = True  # IPython leaves this frame out of the tracebacks it shows
    package = str((globals or {}).get("__package__") or "")
    absolute = name if level == 0 else _resolve(name, package, level)
    top = absolute.partition(".")[0]
    if top not in _shadowed:
        return _import(name, globals, locals, fromlist, level)
    # Imports by name (traitlets' import_item, pickle) pass no globals: the caller's frame tells.
    importer = globals if globals is not None else sys._getframe(1).f_globals
    owner = "kernel" if _from_kernel(importer) else "task"
    if owner == "task" and _in_place.get(top) != "task":
        module = _set_aside["task"].get(top, {}).get(absolute)
        if module is not None and "*" not in (fromlist or ()) and all(hasattr(module, n) for n in fromlist or ()):
            return module if fromlist else _set_aside["task"][top][top]
    with _lock:
        previous = _in_place.get(top, "kernel")
        _put_in_place(top, owner)
        try:
            return _import(name, globals, locals, fromlist, level)
        finally:
            _put_in_place(top, previous)


def _resolve(name: str, package: str, level: int) -> str:
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{base}.{name}" if name else base


def _put_in_place(top: str, owner: str) -> None:
    """Make sys.modules hold ``owner``'s modules of ``top``, setting the other owner's aside (lock held)."""
    current = _in_place.get(top, "kernel")
    if current == owner:
        return
    keys = [key for key in sys.modules if key == top or key.startswith(top + ".")]
    _set_aside[current][top] = {key: sys.modules.pop(key) for key in keys}
    sys.modules.update(_set_aside[owner].pop(top, {}))
    _in_place[top] = owner


def _on_path(path: list[str], top: str) -> bool:
    from importlib.machinery import PathFinder

    try:
        return PathFinder.find_spec(top, path) is not None
    except (ImportError, ValueError):
        return False


def split_from_task() -> None:
    """Put the task's site-packages on sys.path; route imports of what the task has a copy of."""
    import site

    site.main()  # the task environment's site-packages, and the .pth files in them
    sys.path.remove(PACKAGES)
    # IPython puts the working directory after the standard library, before the site-packages.
    if "" in sys.path:
        sys.path.remove("")
        sites = [i for i, p in enumerate(sys.path) if os.path.basename(p) in ("site-packages", "dist-packages")]
        sys.path.insert(sites[0] if sites else 0, "")
    task_path = [p for p in sys.path if p and p != PACKAGES]
    # What the task lacks still comes from the kernel's packages (IPython for display(), matplotlib-inline);
    # the task environment lists them last itself, for its scripts too.
    if PACKAGES not in sys.path:
        sys.path.append(PACKAGES)
    ours = {key.partition(".")[0] for key, m in list(sys.modules.items()) if _file(m).startswith(_PREFIX)}
    _shadowed.update(top for top in ours - NOTEBOOK if _on_path(task_path, top))
    sys.meta_path.insert(0, _NotebookFinder())
    if _shadowed:  # else imports stay exactly as Python does them
        builtins.__import__ = _routed_import  # type: ignore[assignment]  # one more keyword-compatible signature


class _NotebookFinder:
    """Finds the ``NOTEBOOK`` packages in the kernel's packages first, loaded already or not (matplotlib loads
    matplotlib-inline only when a cell first plots)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in NOTEBOOK:
            return None  # submodules are found through their package's own path
        from importlib.machinery import PathFinder

        return PathFinder.find_spec(fullname, [PACKAGES])


def _file(module: Any) -> str:
    origin = getattr(module, "__file__", None)
    return origin if isinstance(origin, str) else ""


# Seconds a command may take to end after the ^C an interrupt sends it, before it is killed (as IPython's).
_INTERRUPT_GRACE = 0.2
# Output is passed on as it comes, and sent on at least this often (seconds) while it keeps coming.
_FLUSH_EVERY = 0.05
# Seconds what a command left behind may keep its terminal open after the shell has exited (``_relay``).
_DRAIN = 0.1


def run_shell(command: str) -> int:
    """Run ``!command`` as IPython does (``$SHELL -c``, or sh, the paper's: agent code is given no
    ``$SHELL`` unless it sets one; in a pseudo-terminal that nothing types
    into; output as it comes; ^C to the command on an interrupt) and return its status as IPython
    gives it: the exit status, or minus the signal that ended it (a shell's 128 + n included).

    IPython's own version (``IPython.utils._process_posix.system``) leaves the child's ``pexpect``
    object to the garbage collector, whose close waits a fixed 0.1 s "for the kernel to update the
    child's status" even when the child has long been reaped; every shell step paid it. Here the child
    is reaped first, then its terminal closed without the wait."""
    import pexpect
    from IPython.utils.encoding import DEFAULT_ENCODING  # what IPython decodes a command's output with

    shell = pexpect.which(os.environ.get("SHELL", "sh"))
    if shell is None:
        raise OSError(f"{os.environ.get('SHELL', 'sh')!r}: shell not found")
    child = pexpect.spawn(shell, args=["-c", command], encoding=DEFAULT_ENCODING, codec_errors="replace")
    try:
        try:
            _relay(child, None)
            child.wait()
        except KeyboardInterrupt:
            child.sendline(chr(3))  # the terminal's ^C: SIGINT to the command's foreground processes
            try:
                _relay(child, time.monotonic() + _INTERRUPT_GRACE)
            except KeyboardInterrupt:
                pass  # a second interrupt: stop waiting for the command's last words
            finally:
                child.terminate(force=True)  # no wait where it is gone already
        child.ptyproc.delayafterclose = 0  # reaped: nothing left to wait for
    finally:
        child.close(force=True)
    if child.exitstatus is None:
        return -child.signalstatus if child.signalstatus is not None else 0
    return -(child.exitstatus - 128) if child.exitstatus > 128 else int(child.exitstatus)


def _relay(child: Any, deadline: float | None) -> None:
    """Write the command's output to the cell's stdout as it comes, until the terminal closes (or the
    deadline passes).

    Read from the terminal directly rather than through ``read_nonblocking``: once the shell has exited,
    pexpect calls it the end when nothing is readable at that instant, but Linux hands a terminal's output
    to its reader asynchronously, so a command's last words (all of a short command's output) could still
    be on their way while something the command left behind holds the terminal open. Here a closed terminal
    ends the relay (the kernel delivers what was written before it reports the close), and once the shell
    is gone, what still holds the terminal gets ``_DRAIN`` seconds to finish, as a background job would."""
    import codecs
    import errno
    import select

    decoder = codecs.getincrementaldecoder(child.encoding)(errors="replace")
    fd = child.child_fd
    flushed = time.monotonic()
    drain_until: float | None = None
    while True:
        now = time.monotonic()
        ends = min(t for t in (deadline, drain_until, now + _FLUSH_EVERY) if t is not None)
        if (deadline is not None and now >= deadline) or (drain_until is not None and now >= drain_until):
            break
        ready, _, _ = select.select([fd], [], [], max(0.0, ends - now))
        if ready:
            try:
                data = os.read(fd, 1 << 16)
            except OSError as e:
                if e.errno != errno.EIO:  # EIO: the terminal's other side is closed and nothing is left
                    raise
                data = b""
            if not data:
                break
            sys.stdout.write(decoder.decode(data))
        elif drain_until is None and not child.isalive():
            drain_until = time.monotonic() + _DRAIN
        if time.monotonic() - flushed >= _FLUSH_EVERY:
            sys.stdout.flush()
            flushed = time.monotonic()
    sys.stdout.write(decoder.decode(b"", final=True))
    sys.stdout.flush()


def _route_shell_escapes() -> None:
    """Make the shell's ``system`` (what ``!command`` calls) run commands through ``run_shell``."""
    import ipykernel.zmqshell
    import IPython.core.interactiveshell

    for module in (IPython.core.interactiveshell, ipykernel.zmqshell):
        if hasattr(module, "system"):
            module.system = run_shell  # type: ignore[attr-defined]


# The most characters of output one stream message carries. A cell that prints 100 MB in one go reaches the
# harness in pieces, each read on its own; read as one message, its bytes, their text and the output were
# all held at once.
STREAM_PIECE = 1 << 16


def _split_stream_messages() -> None:
    """Make the kernel send a stream message of more than ``STREAM_PIECE`` characters as several, in order."""
    from jupyter_client.session import Session

    send = Session.send

    def send_in_pieces(self: Any, stream: Any, msg_or_type: Any, *args: Any, **kwargs: Any) -> Any:
        stream_message = isinstance(msg_or_type, dict) and msg_or_type.get("msg_type") == "stream"
        content: Any = msg_or_type.get("content") if stream_message else None
        text = content.get("text") if isinstance(content, dict) else None
        if args or not isinstance(text, str) or len(text) <= STREAM_PIECE:
            return send(self, stream, msg_or_type, *args, **kwargs)
        parent = msg_or_type.get("parent_header")
        for start in range(0, len(text), STREAM_PIECE):
            piece = {**content, "text": text[start : start + STREAM_PIECE]}
            sent = send(self, stream, self.msg("stream", piece, parent=parent), **kwargs)
        return sent

    Session.send = send_in_pieces  # type: ignore[method-assign]


class _DebuggerBackendBlocked:
    """A finder that makes Jupyter's visual debugger back end (debugpy, with its vendored pydevd) fail to
    import. ipykernel imports it when its kernel is made, at every start, for a debugger no front end here
    asks for: about a quarter of a kernel's start-up CPU. Only while ipykernel's debugger module loads: it
    then runs as ipykernel does where debugpy is not installed, and the package stays installed, for
    ``pip check`` and for agent code that imports it."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in ("debugpy", "_pydevd_bundle"):
            raise ModuleNotFoundError(f"{name} is not loaded by the kernel's start", name=name)


def _without_debugger_backend() -> None:
    blocked = _DebuggerBackendBlocked()
    sys.meta_path.insert(0, blocked)
    try:
        import ipykernel.debugger  # noqa: F401  # remembers, once, that the back end is not there
    finally:
        sys.meta_path.remove(blocked)


def main() -> None:
    sys.path[0] = PACKAGES  # this directory itself holds nothing to import
    # IPython 8 (the kernel's for Python 3.10, the paper's) warns at every `%cd` that it keeps no directory
    # history without pickleshare: the kernel's own noise in the agent's output, which the paper's IPython
    # never printed.
    warnings.filterwarnings("ignore", message="This is now an optional IPython functionality", category=UserWarning)
    _split_stream_messages()
    _without_debugger_backend()
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    class KernelApp(IPKernelApp):
        def init_iopub(self, context: Any) -> None:
            # No limit on the messages queued for the harness: past ZeroMQ's default of 1000 a publisher drops
            # them, and an output sent in pieces (STREAM_PIECE) would lose its end. What is queued is the
            # kernel's memory, where a cell's output is held anyway. Set before the socket binds, since a
            # bound socket's connections keep the options it had then, and left set for the sockets made
            # after it: the IOPub thread hands each message to itself through a pipe of its own (made on its
            # first message), and with ZeroMQ's limit there a flush of more than about 2,000 pieces (130 MB)
            # blocked that thread on its own pipe for ever.
            context.setsockopt(zmq.SNDHWM, 0)
            super().init_iopub(context)  # type: ignore[no-untyped-call]

        def init_extensions(self) -> None:
            # The shell exists; extensions and start-up code are the first that may be the task's.
            split_from_task()
            _route_shell_escapes()
            super().init_extensions()  # type: ignore[no-untyped-call]

    KernelApp.launch_instance()


if __name__ == "__main__":
    main()

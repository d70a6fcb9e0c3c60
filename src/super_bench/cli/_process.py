"""What the ``super-bench`` process does around its command: where its byte code goes, and how it exits.

- Byte code: where the environment forbids writing it beside the sources (``PYTHONDONTWRITEBYTECODE``, or a
  read-only installation), every start compiled the harness's modules again (tens of milliseconds). It is
  then kept in a cache directory of the user's own instead (``sys.pycache_prefix``), where that is safe: a
  directory this user owns that no one else can write, since Python loads what it finds there. A prefix the
  user chose (``PYTHONPYCACHEPREFIX``) is left alone.
- Start-up: importing what a command needs makes some 90,000 objects that live as long as the process and
  hold no garbage, and the collector's passes over them while they are made cost about a tenth of the
  imports' CPU. Until the command has imported what it needs (``started``), the collector runs only every
  100,000 new objects instead of every 700; then the objects made so far are frozen (never scanned again)
  and the usual rhythm is back. A command that does not say when it has started keeps the slow rhythm, which
  still collects.
- Exit: once the command has returned and its output, logs and exit handlers are flushed, the process ends
  without the interpreter's teardown of every module and object (tens of milliseconds more), unless a thread
  that the exit would wait for still runs.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
import threading
from pathlib import Path

from super_bench._paths import cache_dir

_START_UP_THRESHOLD = 100_000
_usual: list[int] = []  # the collector's first threshold before ``starting``, until ``started``


def starting() -> None:
    """Collect rarely while the command imports what it needs (see the module's docstring)."""
    first, *older = gc.get_threshold()
    if first < _START_UP_THRESHOLD:
        gc.set_threshold(_START_UP_THRESHOLD, *older)
        _usual.append(first)


def started() -> None:
    """The command's modules are imported: freeze what exists and collect at the usual rhythm again."""
    if _usual:
        gc.freeze()
        gc.set_threshold(_usual.pop(), *gc.get_threshold()[1:])


def keep_byte_code() -> None:
    """Write and read byte code in the user's cache directory where it cannot be written beside the sources."""
    if sys.pycache_prefix is not None:
        return
    package = Path(__file__).resolve().parents[1]
    if not sys.dont_write_bytecode and os.access(package, os.W_OK):
        return  # beside the sources, as Python does by default
    directory = cache_dir() / "pycache"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError:
        return
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return  # another user could plant byte code there
    sys.pycache_prefix = str(directory)
    sys.dont_write_bytecode = False


def exit_now(code: str | int | None) -> None:
    """End the process with ``code`` (as ``sys.exit`` takes it) once everything is flushed, skipping the
    interpreter's teardown; falls back to ``sys.exit`` while a thread it would wait for is running."""
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 1  # as the interpreter reports an output that could not be written
    os._exit(status)

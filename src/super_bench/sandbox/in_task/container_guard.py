"""Run as the first process (PID 1) of a docker task's container: its lifetime guard.

The kernel delivers to a PID namespace's first process only the signals it has a handler for, when they come
from inside the namespace: agent code, root in the container, can neither stop (SIGSTOP) nor kill this process.
At the end of the lifetime given (seconds, or ``infinity``) it exits, and the container ends with everything in
it, should the harness and its watchdog both be gone by then. Meanwhile it reaps the orphans agent code leaves.
A SIGTERM (the engine's stop) ends it at once. Further arguments: a script to start beside it (the package
cache's forwarder) and that script's arguments.

Standalone: the standard library only, run with ``python3 -S``.
"""

import os
import signal
import sys
import time


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    end = None if sys.argv[1] == "infinity" else time.monotonic() + float(sys.argv[1])
    if len(sys.argv) > 2:
        os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", *sys.argv[2:]], dict(os.environ))
    while end is None or time.monotonic() < end:
        _reap()
        time.sleep(0.5 if end is None else max(0.0, min(0.5, end - time.monotonic())))


if __name__ == "__main__":
    main()

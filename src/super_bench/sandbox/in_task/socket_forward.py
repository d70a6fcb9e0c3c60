"""Run inside a sandbox without the host's network (a docker task's container; a bwrap sandbox with the
network off): the package cache at 127.0.0.1:PORT of the sandbox's own network (its loopback, there even
with ``--network none``), each connection forwarded to the harness's proxy through the unix socket bound
into the sandbox. pip speaks HTTP over TCP only.

Arguments: the socket's path, the port. Started beside the container's main process (in bwrap, beside
the kernel or command of each sandbox), before anything else runs there. It runs with agent code's
privileges: agent code may stop it, and loses only its own package installs; what answers on the socket
is the harness's proxy, with its own rules.
"""

import socket
import sys
import threading

SOCKET, PORT = sys.argv[1], int(sys.argv[2])


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(client: socket.socket) -> None:
    with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
        try:
            upstream.connect(SOCKET)
        except OSError:
            return
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", PORT))
listener.listen(64)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()

"""The kernel's side of a sandbox: its runtime directory (connection file, sockets, log), kept out of
agent code's reach, and the kernel environment (ipykernel and its packages, with the boot script) that
every task's kernel starts from."""

"""The backends: where a task's kernel and commands run (``local``, ``bwrap``, ``docker``).

Each one is a ``Sandbox`` (``super_bench.sandbox.base``) registered in ``SANDBOXES``; ``support`` is what they
share, private to them; everything else in ``sandbox/`` is what they are built from.
"""

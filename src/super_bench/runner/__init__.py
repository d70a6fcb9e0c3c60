"""Running agents over task sets and keeping the run directory.

The modules are imported by name (``super_bench.runner.run``, ``.rescore``, ``.results``), so that
re-scoring or reading a run does not load the kernel and sandbox machinery a run needs; the public
entry points are ``super_bench.run`` and ``super_bench.rescore``.
"""

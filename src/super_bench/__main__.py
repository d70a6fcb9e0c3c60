"""``python -m super_bench``: the same as the ``super-bench`` command."""

from super_bench.cli import entry

entry()

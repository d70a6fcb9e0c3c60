"""Imported by Inspect AI (``inspect_ai`` entry point) to register the super_bench/... tasks and
components."""

from super_bench.integrations.inspect_ext.agent import super_agent
from super_bench.integrations.inspect_ext.scorers import entrypoint, landmarks, output_match
from super_bench.integrations.inspect_ext.tasks import auto, custom, demo_auto, demo_expert, demo_masked, expert, masked
from super_bench.integrations.inspect_ext.tools import continue_wait, edit, execute, interrupt, submit

__all__ = [
    "auto",
    "continue_wait",
    "custom",
    "demo_auto",
    "demo_expert",
    "demo_masked",
    "edit",
    "entrypoint",
    "execute",
    "expert",
    "interrupt",
    "landmarks",
    "masked",
    "output_match",
    "submit",
    "super_agent",
]

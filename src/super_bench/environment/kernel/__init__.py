"""The notebook kernel: cell execution with soft timeouts, interrupts and death detection."""

from super_bench.environment.kernel.client import CellResult, NotebookKernel
from super_bench.environment.kernel.output import OutputBuffer, cap_text, clean_and_cap, clean_output, strip_ansi
from super_bench.environment.kernel.spill import Spilled, SpillFolder, joined

__all__ = [
    "CellResult",
    "NotebookKernel",
    "OutputBuffer",
    "SpillFolder",
    "Spilled",
    "cap_text",
    "clean_and_cap",
    "clean_output",
    "joined",
    "strip_ansi",
]

"""The notebook kernel: cell execution with soft timeouts, interrupts and death detection."""

from super_bench.environment.kernel.client import CellResult, NotebookKernel
from super_bench.environment.kernel.output import OutputBuffer, cap_text, clean_and_cap, clean_output, strip_ansi

__all__ = ["CellResult", "NotebookKernel", "OutputBuffer", "cap_text", "clean_and_cap", "clean_output", "strip_ansi"]

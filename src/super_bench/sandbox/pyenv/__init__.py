"""The Python environments agent code runs in: the task's own environment over a base interpreter, SUPER's
base environment (``super-bench sandbox build``), and the record of what a task's environment holds."""

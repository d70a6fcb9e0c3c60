"""Names shared across the package, in a module that imports nothing, so the CLI can use them cheaply."""

TASK_SETS: tuple[str, ...] = ("expert", "masked", "auto")
METRICS: tuple[str, ...] = ("output_match", "landmarks", "entrypoint", "submitted")
BUDGET_STOPS: tuple[str, ...] = ("max_steps", "max_tokens", "max_cost", "max_compute", "max_wall_time", "max_disk")

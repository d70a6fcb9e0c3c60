"""Running agents over task sets and keeping the run directory."""

from super_bench.runner.results import Summary, TaskResult, summarize
from super_bench.runner.run import RunConfig, RunOutcome, run
from super_bench.runner.rundir import RunDir

__all__ = ["RunConfig", "RunDir", "RunOutcome", "Summary", "TaskResult", "run", "summarize"]

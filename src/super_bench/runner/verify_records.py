"""The records of a verification (``super-bench verify``, ``runner.verify``): ``verify.jsonl``'s rows
(``VerifyResult``) and ``verify-summary.json`` (``VerifySummary``), kept apart from the machinery that
replays, so that the reports read them without loading it."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from super_bench._names import TaskStatus
from super_bench._pydantic import Model
from super_bench.divergence import Divergence
from super_bench.runner.records import VersionedRecord, read_lines
from super_bench.runner.rundir import RunDir, read_run_file
from super_bench.scoring import FieldProvenance, ProvenanceStatus
from super_bench.trajectory import StopReason

log = logging.getLogger(__name__)

VERIFY_ROWS, VERIFY_SUMMARY, VERIFY_DIR = "verify.jsonl", "verify-summary.json", "verify"


class VerifyResult(VersionedRecord):
    """One line of ``verify.jsonl``: whether the replayed actions showed the submitted answer again."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    epoch: int = Field(1, ge=1)
    reproduced: bool | None = Field(
        description="Every submitted value shown again by the replay's outputs (true), not every one (false), or "
        "not checked (null: the task never ran, or the replay failed on the infrastructure); for a run that "
        "submitted nothing, whether the replay failed the same way (same stop, same first error)"
    )
    reason: str | None = Field(None, description="Why it is not reproduced, or not checked")
    divergence: Divergence | None = Field(
        None, description="Where and how the replay first parted from the recording, when it did not reproduce"
    )
    answer_provenance: ProvenanceStatus | None = Field(None, description="The original run's, for comparison")
    fields: list[FieldProvenance] = Field(default_factory=list, description="Each value, in the reproduced outputs")
    status: TaskStatus | None = Field(None, description="How the replay ended; null when none ran")
    stop_reason: StopReason | None = None
    original: str | None = Field(None, description="The original trajectory, relative to the run directory")
    trajectory: str | None = Field(None, description="The reproduced trajectory, relative to the run directory")
    wall_time: float = 0.0
    finished_at: datetime | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.task_id, self.epoch

    @property
    def replayed(self) -> bool:
        """A replay ran to its end (not stopped by an infrastructure failure): a resume keeps the row."""
        return self.status in ("completed", "agent_error")


class VerifyEnvironment(Model):
    """Where the replays ran, and what of the run's own settings was not used (``runner.verify_env``)."""

    asked: dict[str, Any] = Field(default_factory=dict, description="The run's sandbox settings, as run.json has them")
    sandbox: dict[str, Any] = Field(default_factory=dict, description="The settings the replays ran with")
    given: list[str] = Field(default_factory=list, description="The settings the caller's options gave")
    refused: list[str] = Field(default_factory=list, description="Each setting of the run's not used, and why")
    task_environment: dict[str, Any] | None = Field(
        None,
        description="The task environment the replays ran in, as the backend describes it (as run.json's "
        "task_environment: its summary, interpreter, image and differences from the paper's environment)",
    )


class VerifySummary(VersionedRecord):
    """``verify-summary.json``."""

    n_tasks: int = Field(description="Rows: tasks times epochs")
    reproduced: int = Field(description="Answers every value of which the replay showed again")
    not_reproduced: int
    unchecked: int = Field(description="Rows with nothing to check, or whose replay failed on the infrastructure")
    reproduced_fraction: float | None = Field(description="reproduced / (reproduced + not_reproduced)")
    infra_errors: int = 0
    verified_at: datetime
    environment: VerifyEnvironment | None = Field(None, description="Where the replays ran; what was refused")


def read_rows(run_dir: RunDir) -> list[VerifyResult]:
    """The rows of ``verify.jsonl``, the last one per task and epoch winning; unreadable lines skipped."""
    path = run_dir.path / VERIFY_ROWS
    data = read_run_file(path)
    if data is None:
        return []
    # A line a crash cut short is skipped: its task is verified again.
    rows = {row.key: row for row in read_lines(path, VerifyResult, data)}
    return list(rows.values())


def summarize_verification(rows: list[VerifyResult], environment: VerifyEnvironment | None = None) -> VerifySummary:
    yes = sum(r.reproduced is True for r in rows)
    no = sum(r.reproduced is False for r in rows)
    return VerifySummary(
        n_tasks=len(rows),
        reproduced=yes,
        not_reproduced=no,
        unchecked=len(rows) - yes - no,
        reproduced_fraction=yes / (yes + no) if yes + no else None,
        infra_errors=sum(r.status == "infra_error" for r in rows),
        verified_at=datetime.now().astimezone(),
        environment=environment,
    )

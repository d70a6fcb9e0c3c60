"""The trajectory: every step of one episode. It is the contract between execution and
everything after it (scoring, viewer, importer, re-scoring), saved as ``trajectory.json``."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from pydantic import ConfigDict, Field, PrivateAttr, field_validator
from pydantic_core import to_json

from super_bench import messages
from super_bench._files import read_regular
from super_bench._names import BUDGET_STOPS, BudgetStop
from super_bench._pydantic import Model
from super_bench.actions import Action, content_problem, valid_text
from super_bench.spilled import OutputFile

# 2: each step says whether it ended the episode (terminated, truncated, stop_reason). Version 1 files
# load as they are: their steps read as not having ended it.
SCHEMA_VERSION = 2

# Step metadata: the recording gave no time for this step (an imported pre-executed one); its times are
# its neighbour's and it lasts 0 s, so that nothing measured is counted from them.
UNTIMED = "untimed"
# Trajectory metadata: the notebook a recorded run (the paper's published trajectories) was read from. Its
# observations are the history the reference harness kept, as that harness stored it.
RECORDED_FROM = "imported_from"

StepOutcome = Literal["ok", "error", "timeout", "interrupted", "kernel_died", "invalid"]
StopReason = Literal[
    "submitted",  # the agent submitted an answer
    BudgetStop,  # a budget ran out: max_steps, max_tokens, max_cost, max_compute, max_wall_time, max_disk
    "format_error",  # the model kept answering in an unparsable format
    "agent_stopped",  # the agent ended without submitting
    "agent_error",  # the agent's own code raised
    "environment_broken",  # the agent's actions left a kernel that could not be restarted
    "infra_error",  # sandbox, kernel or model API failure
    "cancelled",  # the user stopped the run
]


# The stop reasons of an episode that reached an end of the task by the agent's actions: Gymnasium's
# "terminated" (the budgets in BUDGET_STOPS are its "truncated"). The other reasons are decided
# outside the environment's steps: the agent gave up or failed, the harness failed or was stopped.
TERMINAL_STOPS: tuple[StopReason, ...] = ("submitted", "environment_broken")


def ending(reason: StopReason | None) -> tuple[bool, bool]:
    """``(terminated, truncated)`` for an episode that stopped for ``reason`` (or goes on, for None)."""
    return reason in TERMINAL_STOPS, reason in BUDGET_STOPS


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Figure(Model):
    """An image a cell displayed (a matplotlib figure, say), kept as the notebook's output holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mime: Literal["image/png", "image/jpeg"]
    # Plain base64 and nothing else, so that a page can put it in a data: URL as it is.
    data: str = Field(pattern=r"^[A-Za-z0-9+/]*={0,2}$", description="The image, base64-encoded")


class Step(Model):
    """One action and what came of it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    thought: str | None = None
    action: Action
    observation: str = Field("", description="What the agent was shown: cleaned, capped, with harness notes")
    output: str | None = Field(
        None,
        description="The raw, uncleaned output, kept for grading when it differs from the observation; its head and "
        "tail only where the whole is in a file (output_file)",
    )
    output_file: OutputFile | None = Field(
        None, description="The file beside the trajectory that holds the raw output, where it was too long to hold"
    )
    figures: list[Figure] = Field(
        default_factory=list, description="Images the cell displayed, in order; the text shows where (<Figure ...>)"
    )
    outcome: StepOutcome = "ok"
    exit_code: int | None = Field(None, description="Status of the cell's last !command, if it ran one")
    pre_executed: bool = Field(False, description="Run by the harness before the agent started (Masked tasks)")
    terminated: bool = Field(
        False,
        description="The episode ended with this step in an end state of the task: the agent submitted, or "
        "its actions left no kernel that could run code (environment_broken)",
    )
    truncated: bool = Field(False, description="A budget ran out with this step and ended the episode (max_steps, ...)")
    stop_reason: StopReason | None = Field(None, description="Why the episode ended with this step; null if it goes on")
    start_time: datetime
    end_time: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
    # The folder of the record this step belongs to, where its output_file lies: set by the environment that
    # made the step, or by ``Trajectory.load``.
    _record: Path | None = PrivateAttr(None)

    @field_validator("thought", "observation", "output")
    @classmethod
    def _writable(cls, text: str | None) -> str | None:
        # Agent code can print, and a model can answer, a lone surrogate; no file can hold one.
        return None if text is None else valid_text(text)

    @property
    def raw_output(self) -> str:
        """The output to grade: the raw text where kept, else the observation (they were equal)."""
        return self.observation if self.output is None else self.output

    @property
    def output_record(self) -> Path | None:
        """The folder that holds ``output_file`` (None where the step has none, or was not read from a record)."""
        return self._record if self.output_file is not None else None

    def kept_in(self, record: Path) -> Step:
        """This step, its ``output_file`` read from ``record``."""
        self._record = record
        return self

    @property
    def duration(self) -> float:
        return (self.end_time - self.start_time).total_seconds()

    @property
    def timed(self) -> bool:
        """Whether the step's times were measured (see ``UNTIMED``)."""
        return not self.metadata.get(UNTIMED, False)


Summed = TypeVar("Summed", bound="Figures")


class Figures(Model):
    """Figures that add up field by field (a task's usage, its waste)."""

    def add(self: Summed, other: Summed) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @classmethod
    def summed(cls: type[Summed], items: Iterable[Summed]) -> Summed:
        """The items added up, as ``add`` would, without a model assignment per item: a run has thousands."""
        known = list(items)
        return cls(**{name: sum(getattr(item, name) for item in known) for name in cls.model_fields})


class Usage(Figures):
    """Model usage of one episode."""

    model_config = ConfigDict(extra="forbid")

    model_calls: int = 0
    cached_calls: int = Field(0, description="Calls answered from the response cache (counted in the figures above)")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = Field(0.0, description="USD, at the price table's rates")


class Trajectory(Model):
    """One episode of one agent on one task."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    task_id: str
    query: str
    agent: str | None = None
    model: str | None = None
    steps: list[Step] = Field(default_factory=list)
    submission: Any = None
    submitted: bool = False
    stop_reason: StopReason | None = None
    usage: Usage = Field(default_factory=Usage)
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    kernel_restarts: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def agent_steps(self) -> list[Step]:
        return [s for s in self.steps if not s.pre_executed]

    @property
    def execution_time(self) -> float:
        """Seconds the agent's own steps spent executing."""
        return sum(s.duration for s in self.agent_steps)

    def drop_unkeepable(self) -> list[str]:
        """Replace, in the parts agent code may fill freely (the submission, metadata), each value that
        cannot be written or read back by a note; returns what was replaced. The environment refuses
        such values as they arrive; this is for code that wrote into the trajectory directly. The
        submission must be plain JSON (see ``actions.parse_answer``); metadata, what this trajectory's
        JSON writer can write (a set becomes a list), within ``actions.MAX_CONTENT_DEPTH`` levels."""
        found = []
        places: list[tuple[str, dict[str, Any]]] = [("metadata", self.metadata)]
        places += [(f"step {s.index} metadata", s.metadata) for s in self.steps]
        for where, values in places:
            for key, value in values.items():
                problem = metadata_problem(value)
                if problem is not None:
                    values[key] = messages.not_kept(value, problem)
                    found.append(f"{where} {key!r} {problem}")
        problem = content_problem(self.submission)
        if problem is not None:
            self.submission = messages.not_kept(self.submission, problem)
            found.append(f"the submission {problem}")
        return found

    # -- files ---------------------------------------------------------------------------------
    def save(self, directory: Path) -> Path:
        """Write ``trajectory.json`` (atomically); ``notebook.save_notebook`` writes its notebook beside it."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "trajectory.json"
        atomic_write(path, lambda file: write_json(file, self, indent=1))
        return path

    @classmethod
    def load(cls, path: Path) -> Trajectory:
        """Read a ``trajectory.json`` (or the directory holding one): a regular file, not through a link, of at
        most ``MAX_RECORD_BYTES`` (``_files.read_regular``: a FIFO or a huge sparse file is refused at once)."""
        if path.is_dir():
            path = path / "trajectory.json"
        return cls.model_validate_json(read_regular(path)).kept_in(path.parent)

    def kept_in(self, record: Path) -> Trajectory:
        """This trajectory, the output files its steps name (``Step.output_file``) read from ``record``."""
        for step in self.steps:
            if step.output_file is not None:  # (a private attribute counts in ==: set only where it is used)
                step.kept_in(record)
        return self


def metadata_problem(value: Any) -> str | None:
    """Why ``value`` cannot be kept in a trajectory's metadata, or None when it can."""
    problem = content_problem(value, strict=False)
    if problem is not None:
        return problem
    try:
        to_json(value)
    except ValueError as e:  # an object pydantic has no JSON for
        return f"cannot be written as JSON ({e})"
    return None


def atomic_write(path: Path, content: str | bytes | Callable[[BinaryIO], None]) -> None:
    """Write a file (text as UTF-8, or what a writer given the open file writes) so that readers see the old
    or the new content, never a torn one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
        # mkstemp makes the file private (0600); give it the mode a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_step_line(file: BinaryIO, step: Step) -> None:
    """One step as a JSON line, for the append-only log written while an episode runs (``write_json``)."""
    write_json(file, step)
    file.write(b"\n")


# A step's output longer than this is written into its record's JSON piece by piece.
STREAMED_CHARS = 1 << 20
# The pieces: small enough that each one's encodings are reused heap, not memory mapped afresh and given back
# (a megabyte's were: some 77,000 page faults for a 100 MB output, 0.15 s more to write its step).
_PIECE_CHARS = 1 << 16


def write_json(file: BinaryIO, record: Step | Trajectory, *, indent: int | None = None) -> None:
    """``record``'s JSON into ``file``, byte for byte as pydantic writes it, without ever holding the JSON of
    a long output (a step may hold 100 MB): pydantic encodes the record with a marker in place of each
    output longer than ``STREAMED_CHARS``, and the outputs are encoded where the markers stand, a piece at a
    time, by the standard library's JSON string encoder (which escapes exactly what pydantic's does). The
    marker is drawn at random for each record, so no text in it can hold it; if one did, the record is
    encoded whole."""
    steps = record.steps if isinstance(record, Trajectory) else [record]
    long = [s.output for s in steps if s.output is not None and len(s.output) > STREAMED_CHARS]
    if long:
        marker = secrets.token_hex(16)
        light = [
            s.model_copy(update={"output": marker}) if s.output is not None and len(s.output) > STREAMED_CHARS else s
            for s in steps
        ]
        skeleton = record.model_copy(update={"steps": light}) if isinstance(record, Trajectory) else light[0]
        parts = skeleton.__pydantic_serializer__.to_json(skeleton, indent=indent).split(f'"{marker}"'.encode())
        if len(parts) == len(long) + 1:
            file.write(parts[0])
            for text, part in zip(long, parts[1:]):
                file.write(b'"')
                for start in range(0, len(text), _PIECE_CHARS):
                    file.write(encode_basestring(text[start : start + _PIECE_CHARS])[1:-1].encode("utf-8"))
                file.write(b'"')
                file.write(part)
            return
    file.write(record.__pydantic_serializer__.to_json(record, indent=indent))

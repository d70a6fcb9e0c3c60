"""The run directory's records, versioned: ``run.json`` (``RunManifest``, here), and the rows of
``results.jsonl`` and ``summary.json`` (``TaskResult`` and ``Summary``, in ``results``).

Every record carries ``schema_version``. One read from a file without it was written before records
had it: version 1 (``VersionedRecord.from_json``). Reading a record of an earlier version brings it to
the current one; a record of a later version is refused, since this super-bench cannot tell what it holds.
docs/run-directory.md lists the versions.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict, Field, ValidationError, field_validator

from super_bench._pydantic import Model
from super_bench.errors import RunDirError

log = logging.getLogger(__name__)

# 2: every record says its version; run.json's identity names each setting that decides the scores
# (``env.sandbox.memory_limit``, ...), where version 1 held a few of them, the limits grouped.
# 3: result rows and summary.json record where the time went to waste (``waste``), the time a task waited
# for room on its machine (``waited``) and which machine ran it (``node``); earlier rows read as not knowing.
# 4: result rows record why a task did not fully succeed (``failure``: its primary cause, step and quote), and
# summary.json counts the causes (``failure_causes``, ``failure_causes_by_category``); earlier rows read as
# not analysed (null; ``super-bench analyze`` computes them).
# 5: result rows carry the digest of the run's identity (``identity_sha256``), so that a resume can check the rows
# when run.json is lost; earlier rows read as not saying (null), and are adopted unchecked, once confirmed.
RUN_SCHEMA_VERSION = 5


class NewerRecordError(RunDirError):
    """A record was written by a newer super-bench, in a version this one cannot read."""


Record = TypeVar("Record", bound="VersionedRecord")


class VersionedRecord(Model):
    """A record of the run directory, in the current version once read (``from_json``)."""

    schema_version: int = Field(RUN_SCHEMA_VERSION, description="The version of the record's format")

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, version: Any) -> Any:
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"schema_version must be a whole number from 1, not {version!r}")
        if version > RUN_SCHEMA_VERSION:
            raise NewerRecordError(
                f"it was written by a newer super-bench (schema version {version}; this one reads versions up to "
                f"{RUN_SCHEMA_VERSION}); upgrade super-bench to read it"
            )
        return version

    @classmethod
    def from_json(cls: type[Record], text: str | bytes) -> Record:
        """A record read from a file, in the current version (``from_stored``). One of the current version, as
        this version writes it, is validated straight from its text, in one pass."""
        try:
            record = cls.model_validate_json(text)
        except ValidationError:
            pass  # read again below, so that the error says what from_stored says
        else:
            if record.schema_version == RUN_SCHEMA_VERSION and "schema_version" in record.model_fields_set:
                return record
        return cls.from_stored(json.loads(text))

    @classmethod
    def from_stored(cls: type[Record], data: Any) -> Record:
        """A record as read from a file, in the current version: one without ``schema_version`` is of version 1
        (written before records had it), one of an earlier version is brought to this one (``upgrade``), one
        of a later version is refused (``NewerRecordError``)."""
        if isinstance(data, dict):
            version = data.get("schema_version", 1)
            if isinstance(version, int) and not isinstance(version, bool) and 1 <= version < RUN_SCHEMA_VERSION:
                data = {**cls.upgrade(dict(data), version), "schema_version": RUN_SCHEMA_VERSION}
        return cls.model_validate(data)

    @classmethod
    def upgrade(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """``data``, a record of an earlier ``version``, in the current version's form."""
        return data


class TaskSource(Model):
    """Where a run's tasks came from, and a digest of the records run (``sha256sum tasks.jsonl``)."""

    model_config = ConfigDict(extra="allow")

    source: str
    set: str | None = None
    n_tasks: int
    sha256: str
    revision: str | None = Field(None, description="The Hub dataset's commit, or the super-bench version of the demo")
    source_sha256: str | None = Field(None, description="Of a task file, or of a directory's task files")


class Executor(Model):
    model_config = ConfigDict(extra="allow")

    name: str
    workers: int | None = None
    epochs: int = 1
    task_threads: int | None = Field(
        None, description="Threads each task's OpenMP, OpenBLAS and MKL were given (several local workers)"
    )
    ray: dict[str, Any] | None = Field(None, description="Address and per-task resources, with the ray executor")


class Rescoring(Model):
    """One ``super-bench score`` of the run."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    mode: str
    at: datetime
    copied_from: str | None = Field(None, alias="from", description="The run it copied, when scored into a copy")


class RunManifest(VersionedRecord):
    """``run.json``: what was run, how, from which tasks, with which versions (docs/runner.md#the-manifest).

    Written with only the keys that apply (``model_dump_json(exclude_unset=True)``): a run that was not
    resumed has no ``resumed_at``, an imported one no ``identity``. Keys this version does not know
    (from a file edited by hand, say) are kept."""

    model_config = ConfigDict(extra="allow")

    super_bench_version: str | None = None
    python: str | None = None
    platform: str | None = None
    command: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    resumed_at: list[datetime] = Field(default_factory=list)
    identity: dict[str, Any] | None = Field(
        None, description="What a resume must match: each setting that decides the scores, by its dotted name"
    )
    tasks: TaskSource | None = None
    sandbox: dict[str, Any] = Field(default_factory=dict)
    executor: Executor | None = None
    config: dict[str, Any] = Field(default_factory=dict, description="The whole RunConfig")
    task_environment: dict[str, Any] | None = None
    rescored: list[Rescoring] = Field(default_factory=list)
    imported_from: str | None = Field(None, description="The directory of published trajectories it was imported from")
    n_tasks: int | None = Field(None, description="Tasks imported")

    @property
    def task_environment_line(self) -> str | None:
        """The task environment in one line, as summary.json says it."""
        return (self.task_environment or {}).get("summary")

    @classmethod
    def upgrade(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        identity = data.get("identity")
        if version == 1 and isinstance(identity, dict):
            # Version 1 grouped the environment's limits; they are the environment's settings.
            limits = identity.get("limits")
            flat = {key: value for key, value in identity.items() if key != "limits"}
            if isinstance(limits, dict):
                flat.update({f"env.{name}": value for name, value in limits.items()})
            data["identity"] = flat
        return data

    def to_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True, exclude_unset=True)


def read_lines(path: Path, model: type[Record], data: bytes) -> Iterator[Record]:
    """The records of the JSON-lines file at ``path``, whose bytes are ``data`` (read by the caller, as a
    file of a run directory: ``rundir.read_run_file``), in the current version. A line that cannot be read
    (typically one a crash cut short) is skipped with a warning; a record of a later version is refused."""
    for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield model.from_json(line)
        except NewerRecordError as e:
            raise NewerRecordError(f"{path}:{lineno}: {e}") from None
        except (ValueError, RecursionError):  # not JSON, or not a record (ValidationError is a ValueError)
            log.warning("%s:%d: unreadable line skipped", path, lineno)

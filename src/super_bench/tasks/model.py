"""The ``Task`` record, shared by the Expert, Masked and Auto sets.

Rows come from the SUPER dataset (where ``answer``, ``pre_execute_cells`` and friends are
JSON strings), from users' own files, or from the bundled demo suite; the validators accept
every one of those shapes and store one normalised form.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, field_serializer, field_validator, model_validator

from super_bench._names import TaskSet
from super_bench._pydantic import Model
from super_bench.actions import Action
from super_bench.errors import SuperBenchError

if TYPE_CHECKING:
    import regex

MASKED_CATEGORIES = ("data", "dependencies", "goal", "issue", "configuration", "cpu", "custom", "customgoal")
DEFAULT_MIN_RUNTIME = 10.0


@functools.lru_cache(maxsize=4096)
def compile_landmark(pattern: str) -> regex.Pattern[str]:
    """A landmark as it is searched (scoring, the viewer, ``tasks validate``): with the ``regex`` engine in
    its ``re``-compatible mode (``VERSION0``: the syntax and matches of Python's ``re``, which the reference
    used), because its searches take a time limit. Cached here: ``regex``'s own cache costs more to look up
    (about 15 µs) than scoring a landmark. Imported here, on first use: a run of tasks without landmarks (an
    ad-hoc query) does not pay for the engine's import."""
    import regex

    return regex.compile(pattern, regex.VERSION0)


class Task(Model):
    """One SUPER problem: what to do, in which repository, and how it is graded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(min_length=1)
    query: str = Field(min_length=1, description="The instructions the agent gets")
    task_set: TaskSet = Field("expert", description="expert, masked or auto")
    answer: Any = Field(None, description="Gold answer (a JSON value); graded by output match")
    landmarks: list[str] = Field(default_factory=list, description="Regexes for milestones in the outputs")
    entrypoint: str | None = Field(None, description="Script that must run successfully (Auto set)")
    min_runtime: float | None = Field(
        None, ge=0, description=f"Seconds the entrypoint must run (default {DEFAULT_MIN_RUNTIME:g})"
    )
    pre_execute_cells: list[Action] = Field(default_factory=list, description="Masked: cells run before the agent")
    solution: list[Action] = Field(default_factory=list, description="Gold solution cells")
    github_repo: str | None = None
    git_commit: str | None = None
    query_components: dict[str, Any] | None = None
    solution_dependencies: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="Anything else the source carried")

    @field_validator("answer", mode="before")
    @classmethod
    def _parse_answer(cls, value: Any) -> Any:
        # The dataset stores answers as JSON text; an empty string means "no gold answer".
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                return json.loads(value)
            except json.JSONDecodeError as e:
                raise ValueError(f"answer is not valid JSON ({e.msg} at char {e.pos}): {value[:80]!r}") from e
        return value

    @field_serializer("answer", when_used="json")
    def _answer_as_stored(self, value: Any) -> Any:
        # A string is read as the dataset's JSON text (above): a plain string answer is written as that text,
        # so that "foo" and "0.5" come back as strings from tasks.jsonl rather than failing or turning numeric.
        return json.dumps(value) if isinstance(value, str) else value

    @field_validator("landmarks", mode="before")
    @classmethod
    def _parse_landmarks(cls, value: Any) -> Any:
        value = _json_or_value(value)
        if value is None:
            return []
        if isinstance(value, list):
            for i, pattern in enumerate(value):
                try:
                    re.compile(pattern)
                except (re.error, TypeError) as e:
                    raise ValueError(f"landmark {i} ({pattern!r}) is not a valid regex: {e}") from e
        return value

    @field_validator("pre_execute_cells", "solution", mode="before")
    @classmethod
    def _parse_cells(cls, value: Any) -> Any:
        value = _json_or_value(value)
        if value is None:
            return []
        if isinstance(value, str):
            return [Action.execute(value)]  # a solution given as one block of code
        if not isinstance(value, list):
            raise ValueError(f"expected a list of cells, got {type(value).__name__}")
        return [_as_action(item) for item in value]

    @field_validator("query_components", mode="before")
    @classmethod
    def _parse_components(cls, value: Any) -> Any:
        value = _json_or_value(value)
        return value or None

    @field_validator("entrypoint", "github_repo", "git_commit", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_gradable(self) -> Task:
        if self.task_set == "auto" and not self.entrypoint:
            raise ValueError("an auto task needs an entrypoint (the script whose run is graded)")
        return self

    @property
    def categories(self) -> list[str]:
        """Masked categories from the id suffix: ``abc_configuration,data`` -> [configuration, data]."""
        return masked_categories(self.task_id, self.task_set)

    @property
    def expert_id(self) -> str:
        """The Expert task a Masked task was cut from (itself for other sets)."""
        return self.task_id.rsplit("_", 1)[0] if self.categories else self.task_id

    @property
    def effective_min_runtime(self) -> float:
        return DEFAULT_MIN_RUNTIME if self.min_runtime is None else self.min_runtime


def _json_or_value(value: Any) -> Any:
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            return None
        if stripped[0] in "[{":
            try:
                return json.loads(stripped)
            except json.JSONDecodeError:
                return value
    return value


def _as_action(item: Any) -> Action:
    """A cell given as an Action, a ``{"type", "content"}`` dict, JSON text of one, or plain code."""
    if isinstance(item, str):
        parsed = _json_or_value(item)
        if not isinstance(parsed, dict) or not {"type", "action"} & parsed.keys():
            return Action.execute(item)  # code, even code that happens to start with "{"
        item = parsed
    try:
        return Action.coerce(item)
    except SuperBenchError as e:
        raise ValueError(str(e)) from e


@dataclass(frozen=True)
class RawRow:
    """One task row before validation, with where it came from."""

    data: dict[str, Any]
    origin: str  # "file.jsonl:12", "hf allenai/super Expert row 3"
    task_set: str | None = None  # set implied by the file or split it came from
    error: str | None = None  # why the row could not even be read as an object


def masked_categories(task_id: str, task_set: str | None) -> list[str]:
    """A Masked task's categories from its id's suffix (``abc_configuration,data`` -> [configuration, data]);
    none for a task of another set, or an id without a suffix."""
    if task_set != "masked" or "_" not in task_id:
        return []
    return task_id.rsplit("_", 1)[1].split(",")

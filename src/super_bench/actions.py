"""Agent actions: one notebook cell, a file edit, a submission, or a reaction to a timeout."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from super_bench.errors import SuperBenchError

ActionType = Literal["execute", "edit", "submit", "interrupt", "continue_wait"]
ACTION_TYPES: tuple[str, ...] = ("execute", "edit", "submit", "interrupt", "continue_wait")


class Action(BaseModel):
    """``{"type": ..., "content": ...}``: for ``execute`` a cell, for ``edit`` the SUPER edit
    text, for ``submit`` the answer (a JSON value, or JSON text to be parsed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ActionType
    content: Any = None

    @classmethod
    def execute(cls, code: str) -> Action:
        return cls(type="execute", content=code)

    @classmethod
    def submit(cls, answer: Any) -> Action:
        return cls(type="submit", content=answer)

    @classmethod
    def coerce(cls, value: Any) -> Action:
        """An Action from an Action, a ``{"type", "content"}`` dict, or its JSON text."""
        if isinstance(value, Action):
            return value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                raise SuperBenchError(f"not an action: {value[:80]!r} is not JSON ({e.msg})") from e
        if isinstance(value, dict) and "action" in value and "type" not in value:
            value = value["action"]  # {"action": {...}, "observation": ...} records
        try:
            return cls.model_validate(value)
        except ValidationError as e:
            raise SuperBenchError(
                f"not an action: {str(value)[:80]!r}; expected {{'type': one of {', '.join(ACTION_TYPES)}, "
                f"'content': ...}} ({e.errors()[0]['msg']})"
            ) from e

"""Click options generated from a config model's fields: the flag from the field's name, the type, its range or
choices, the default and the help from the field, so that an option cannot disagree with the setting it sets.

The options are made on first need (a command's help, or its parsing: ``GeneratedCommand``), so that loading the
command line imports no config model (``super-bench --help`` loads every command).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from super_bench.cli._options import Default, ManyValues, ManyValuesCommand

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo


class GeneratedCommand(ManyValuesCommand):
    """A command whose first options are made by ``generate`` when they are first needed."""

    def __init__(self, *args: Any, generate: Callable[[], list[click.Parameter]], **kwargs: Any) -> None:
        self._generate: Callable[[], list[click.Parameter]] | None = None
        super().__init__(*args, **kwargs)
        self._generate = generate

    @property
    def params(self) -> list[click.Parameter]:
        if self._generate is not None:
            generate, self._generate = self._generate, None
            self._declared[:0] = generate()
        return self._declared

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._declared = value


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """The annotation with ``None`` taken out of a union, and whether it was there."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0], len(rest) < len(typing.get_args(annotation))
    return annotation, False


def _bounds(field: FieldInfo) -> dict[str, Any]:
    """The range a field's constraints allow, as click's ranges take it."""
    bounds: dict[str, Any] = {}
    for constraint in field.metadata:
        for name, key, is_open in (
            ("ge", "min", False),
            ("gt", "min", True),
            ("le", "max", False),
            ("lt", "max", True),
        ):
            value = getattr(constraint, name, None)
            if value is not None:
                bounds[key] = value
                bounds[f"{key}_open"] = is_open
    return bounds


def _type(field: FieldInfo) -> dict[str, Any]:
    """What click needs to read a field's value: its type, or that it is a flag or takes several words."""
    annotation, _ = _without_none(field.annotation)
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return {"is_flag": True}
    if origin is Literal:
        return {"type": click.Choice([str(v) for v in typing.get_args(annotation)])}
    if origin is list:
        return {"cls": ManyValues, "type": str}
    bounds = _bounds(field)
    if annotation is int:
        return {"type": click.IntRange(**bounds) if bounds else click.INT}
    if annotation is float:
        return {"type": click.FloatRange(**bounds) if bounds else click.FLOAT}
    if annotation is Path:
        return {"type": click.Path(path_type=Path)}
    if annotation is str:
        return {"type": str}
    raise TypeError(f"no option can be made for a field of type {annotation!r}")


def field_option(
    owner: type[BaseModel], name: str, *, option: str | None = None, prefix: str = "", **overrides: Any
) -> click.Option:
    """The option ``--PREFIX-NAME`` (its parameter ``PREFIX_NAME``) for the field ``name`` of ``owner``; ``option``:
    the option's name where it is not the field's; ``overrides``: click's own arguments where the option needs other
    than what the field says (another flag, say)."""
    field = owner.model_fields[name]
    parameter = f"{prefix}{option or name}"
    flags = overrides.pop("flags", ["--" + parameter.replace("_", "-")])
    settings: dict[str, Any] = {**_type(field), "help": field.description or ""}
    if field.get_default(call_default_factory=True) is not None and not settings.get("is_flag"):
        # Read when the option is not given, so that it is the field's default then.
        settings.update(default=Default(f"{owner.__module__}:{owner.__qualname__}.{name}"), show_default=True)
    settings.update(overrides)
    option_class = settings.pop("cls", click.Option)
    made: click.Option = option_class([*flags, parameter], **settings)
    return made


def model_options(
    model: type[BaseModel],
    names: Iterable[str],
    *,
    prefix: str = "",
    overrides: dict[str, dict[str, Any]] | None = None,
) -> list[click.Option]:
    """An option for each of ``names``, fields of ``model``."""
    overrides = overrides or {}
    return [field_option(model, name, prefix=prefix, **overrides.get(name, {})) for name in names]

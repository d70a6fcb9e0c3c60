"""Click helpers shared by the commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class ManyValues(click.Option):
    """An option that takes every following word up to the next option: ``--task-ids a b c``.

    Repeating the option works too. (Values are never split on commas: Masked task ids
    such as ``abc_configuration,data`` contain them.)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("multiple", True)
        super().__init__(*args, **kwargs)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:
                continue
            original = option.process

            def process(value: Any, state: Any, _original: Any = original) -> None:
                values = [value]
                while state.rargs and not state.rargs[0].startswith("-"):
                    values.append(state.rargs.pop(0))
                for v in values:
                    _original(v, state)

            option.process = process


def as_list(values: tuple[str, ...] | None) -> list[str] | None:
    """The option's values; None when none were given."""
    return list(values) if values else None


mode_option = click.option(
    "--mode",
    type=click.Choice(["corrected", "reference"]),
    default="corrected",
    show_default=True,
    help="Output-match scoring: corrected, or exactly as the reference harness (the paper's numbers).",
)


def size_option(*names: str, help: str) -> Callable[[F], F]:
    """An option that takes a size such as ``8g``, ``512m`` or a number of bytes; its value is bytes."""

    def to_bytes(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
        from super_bench.sandbox.base import parse_size

        try:
            return None if value is None else parse_size(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from e

    return click.option(*names, metavar="SIZE", callback=to_bytes, help=help)

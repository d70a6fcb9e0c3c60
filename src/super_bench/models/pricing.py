"""Prices of model calls, in USD per million tokens.

The built-in table (``prices.json``) covers the models of the paper and common current ones;
a user's JSON or TOML file adds entries or overrides them::

    {"openai/my-finetune": {"input": 0.5, "output": 1.5}}

A key matches a model spec exactly, or a dated version of it (``openai/gpt-4o`` matches
``openai/gpt-4o-2024-08-06``), or is ``provider/*`` for a whole provider; the longest matching
key wins. Nothing else is guessed: a model missing from the table costs 0, with a warning.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from super_bench._pydantic import Model
from super_bench.errors import ConfigError

_VERSION_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)")


class Price(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="USD per million prompt tokens")
    output: float = Field(ge=0, description="USD per million completion tokens")


def _parse(data: Any, where: str) -> dict[str, Price]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a price table maps model names to {{'input': USD, 'output': USD}} per 1M tokens")
    table = {}
    for key, value in data.items():
        try:
            table[key] = Price.model_validate(value)
        except ValidationError as e:
            problem = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'value'}: {err['msg']}" for err in e.errors())
            raise ConfigError(
                f"{where}: price of {key!r}: {problem} (expected input and output, USD per 1M tokens)"
            ) from e
    return table


def read_price_file(path: Path) -> dict[str, Price]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the price file {path}: {e}") from e
    if path.suffix.lower() == ".toml":
        try:
            import tomllib  # type: ignore[import-not-found,unused-ignore]
        except ImportError as e:  # Python 3.10
            raise ConfigError(f"{path}: TOML price files need Python 3.11 or later; use JSON") from e
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path} is not valid TOML: {e}") from e
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from e
    return _parse(data, str(path))


@functools.lru_cache(maxsize=1)
def _builtin() -> dict[str, Price]:
    text = resources.files("super_bench.models").joinpath("prices.json").read_text(encoding="utf-8")
    data = {k: v for k, v in json.loads(text).items() if not k.startswith("_")}
    return _parse(data, "the built-in price table")


class PriceTable:
    def __init__(self, prices: dict[str, Price]) -> None:
        self.prices = prices

    @classmethod
    def load(cls, extra: Path | None = None) -> PriceTable:
        """The built-in table, with the entries of ``extra`` added over it."""
        return cls({**_builtin(), **(read_price_file(extra) if extra else {})})

    def lookup(self, spec: str) -> Price | None:
        best: tuple[int, Price] | None = None
        for key, price in self.prices.items():
            if key.endswith("/*"):
                hit = spec.startswith(key[:-1])
            else:
                hit = spec == key or (spec.startswith(key) and _VERSION_SUFFIX.fullmatch(spec[len(key) :]) is not None)
            if hit and (best is None or len(key) > best[0]):
                best = (len(key), price)
        return best[1] if best else None

    def cost(self, spec: str, prompt_tokens: int, completion_tokens: int) -> float:
        price = self.lookup(spec)
        if price is None:
            return 0.0
        return (prompt_tokens * price.input + completion_tokens * price.output) / 1_000_000

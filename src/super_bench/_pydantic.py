"""The base of every pydantic model of super-bench.

pydantic builds a model's validator and serializer (its core schema) when the class is defined, which was
most of what importing a module of records cost. A one-cell run imports some forty models and validates or
writes about twenty-five; the others (model prices, build requests, provenance, failure analyses, bundles,
...) serve other commands or other paths. Built on first use instead (``defer_build``: at the first
validation, construction, serialization or schema), they cost a one-cell run about 14 ms of CPU less and
behave the same once built; pydantic serializes first builds across threads. A model that a library wraps
in an annotation of its own (FastAPI's request bodies) is better built at import: see the server's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model built on first use. A subclass's own ``model_config`` is merged with this one."""

    model_config = ConfigDict(defer_build=True)

"""Assertion types. Importing this package registers every type in `registry.REGISTRY`."""

from . import (  # noqa: F401  (registration)
    custom,
    distance,
    graded,
    json,
    overlap,
    promptkit,
    provider,
    structure,
    text,
    tools,
)
from .registry import REGISTRY, Ctx, Kind, Verdict, assertion, lookup

__all__ = ["REGISTRY", "Ctx", "Kind", "Verdict", "assertion", "lookup"]

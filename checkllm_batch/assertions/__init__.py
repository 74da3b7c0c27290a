"""Assertion types. Importing this package registers every type in `registry.REGISTRY`."""

from . import distance, graded, jsonchecks, provider, text  # noqa: F401  (registration)
from .registry import REGISTRY, Ctx, Kind, Verdict, assertion, lookup

__all__ = ["REGISTRY", "Ctx", "Kind", "Verdict", "assertion", "lookup"]

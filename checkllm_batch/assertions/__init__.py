"""Assertion types. Importing this package registers every type in `registry.REGISTRY`."""

from . import distance, graded, jsonchecks, provider, text  # noqa: F401  (registration)
from . import expression, promptkit, scripts, sets, toolcalls, webhook  # noqa: F401
from . import metadata, meteor, overlap, structure, tools, words  # noqa: F401  (registration)
from .registry import REGISTRY, Ctx, Kind, Verdict, assertion, lookup

__all__ = ["REGISTRY", "Ctx", "Kind", "Verdict", "assertion", "lookup"]

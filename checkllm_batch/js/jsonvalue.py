"""Comparing parsed JSON values as the tool-call and JSON-path checks expect."""

from __future__ import annotations

from typing import Any


def same_value(a: Any, b: Any) -> bool:
    """Two parsed JSON values are equal: numbers by value (1 == 1.0, but never a boolean),
    objects key by key, arrays item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b

"""Structured output (judge `structured: true`): the JSON a graded type reads, as a JSON
schema the server constrains the reply to (`response_format` json_schema; llama.cpp, vLLM,
Ollama and OpenAI all accept it), and how a reply of that shape reads as the text the type's
parser already reads. The parser is the same with or without the setting, so a reply of
the shape and the free-text reply it stands for give the same verdict.

Each type's shape lives in the type's module, next to its prompt and parser; this module
only holds what they share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

# A judge's text, bounded: a small model constrained to a schema can loop inside a string
# until max_tokens (SmolLM2 through llama.cpp ran 300-1000 tokens into a `reason`), and a
# cut reply is an error. `pattern` (not maxLength, which OpenAI's strict mode refuses) keeps
# it to one line of at most 200 characters, no quote or backslash (no escapes to go wrong).
STRING: dict[str, Any] = {"type": "string", "pattern": '^[^"\\\\\\n]{0,200}$'}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
UNIT: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}


def one_of(*values: Any) -> dict[str, Any]:
    return {"enum": list(values)}


def list_of(item: dict[str, Any], at_least: int = 0, at_most: int = 20) -> dict[str, Any]:
    """An array of `item`: bounded too (a list can loop like a string)."""
    return {"type": "array", "items": item, "maxItems": at_most,
            **({"minItems": at_least} if at_least else {})}


def record(**properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, all required (OpenAI's strict mode wants
    every property required and no others)."""
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def one_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


@dataclass(frozen=True)
class Shape:
    """A reply shape: `name` (the schema's name), its properties (in the order the judge
    writes them: a reason before the verdict), and `as_text`, the reply of that shape as the
    text its type parses (default: the object as one line of JSON)."""

    name: str
    properties: dict[str, Any]
    as_text: Callable[[dict[str, Any]], str] = one_line

    def response_format(self) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {
            "name": self.name, "strict": True, "schema": record(**self.properties)}}

    def read(self, text: str) -> str:
        """A reply of this shape as the text its parser reads; any other reply unchanged
        (the parser then says what is wrong with it)."""
        try:
            obj = json.loads(text)
        except ValueError:
            return text
        if not isinstance(obj, dict) or not set(self.properties) <= set(obj):
            return text
        try:
            return self.as_text(obj)
        except (TypeError, ValueError, AttributeError):  # a value of another type: as sent
            return text

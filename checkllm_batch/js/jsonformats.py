"""JSON Schema `format:` as promptfoo checks it: ajv 8 with ajv-formats 3 ("full" formats).

jsonschema-rs validates most formats as ajv-formats does (date, uri, hostname, ipv4/6,
duration, json-pointer, ...). Where they differ, or where ajv-formats has a format
jsonschema-rs lacks, the rule below replaces it; each follows ajv-formats' documented rule.
An unknown format is an error in both (ajv's strict mode). Schemas are read as ajv's default
dialect, draft-07 (AJV_DIALECTS), `multipleOf` is ajv's float division and `contentEncoding` /
`contentMediaType` are annotations (AJV_KEYWORDS).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable

_TIME = re.compile(r"(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?", re.I | re.A)
_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)", re.A)
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_EMAIL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.)+{_LABEL}", re.I | re.A)
_HOSTNAME = re.compile(r"(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
                       r"(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?", re.I | re.A)
_UUID = re.compile(r"(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.I | re.A)
_BASE64_LINE = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
                          re.M | re.A)
# ISO 8601 durations as ajv-formats takes them: whole numbers only, weeks on their own
_DURATION = re.compile(r"P(?!\Z)(?:(?:\d+Y)?(?:\d+M)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+S)?)?"
                       r"|(?:\d+W)?)", re.A)
_POINTER_FRAGMENT = re.compile(r"#(?:/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~[01])*)*",
                               re.I | re.A)
_OCTET = r"(?:1?\d{1,2}|2[0-4]\d|25[0-5])"
_PUBLIC_IPV4 = (r"(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})"
                r"(?!172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2})"
                rf"(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.{_OCTET}){{2}}"
                r"\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4])")
_NAME = r"(?:[a-z0-9\u00a1-\uffff]+-)*[a-z0-9\u00a1-\uffff]+"


@functools.cache
def _url() -> re.Pattern[str]:
    """Compiled at first use, not at import: its Unicode ranges under re.I take ~20 ms."""
    return re.compile(rf"(?:https?|ftp)://(?:\S+(?::\S*)?@)?(?:{_PUBLIC_IPV4}|{_NAME}"
                      r"(?:\.{_NAME})*\.[a-z\u00a1-\uffff]{2,})(?::\d{2,5})?(?:/\S*)?", re.I)


def _date(text: str) -> bool:
    m = _DATE.fullmatch(text)
    if not m:
        return False
    year, month, day = (int(g) for g in m.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])


def _time(strict_zone: bool) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        m = _TIME.fullmatch(text)
        if not m:
            return False
        hour, minute, second = int(m[1]), int(m[2]), float(m[3])
        sign = -1 if m[5] == "-" else 1
        zone_h, zone_m = int(m[6] or 0), int(m[7] or 0)
        if zone_h > 23 or zone_m > 59 or (strict_zone and not m[4]):
            return False
        if hour <= 23 and minute <= 59 and second < 60:
            return True
        utc_m = minute - zone_m * sign  # a leap second: 23:59:60 in UTC
        utc_h = hour - zone_h * sign - (1 if utc_m < 0 else 0)
        return utc_h in (23, -1) and utc_m in (59, -1) and second < 61
    return check


def _date_time(strict_zone: bool) -> Callable[[str], bool]:
    time = _time(strict_zone)

    def check(text: str) -> bool:
        parts = re.split(r"[tT\s]", text)
        return len(parts) == 2 and _date(parts[0]) and time(parts[1])
    return check


def _js_regex(text: str) -> bool:
    from .jsregex import compile_js
    try:
        compile_js(text)
    except ValueError:
        return False
    return True


def _always(text: str) -> bool:
    return True


AJV_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _date, "time": _time(True), "date-time": _date_time(True),
    "iso-time": _time(False), "iso-date-time": _date_time(False),
    "email": lambda s: bool(_EMAIL.fullmatch(s)), "hostname": lambda s: bool(_HOSTNAME.fullmatch(s)), "uuid": lambda s: bool(_UUID.fullmatch(s)),
    "url": lambda s: bool(_url().fullmatch(s)), "byte": lambda s: bool(_BASE64_LINE.search(s)),
    "regex": _js_regex, "duration": lambda s: bool(_DURATION.fullmatch(s)),
    "json-pointer-uri-fragment": lambda s: bool(_POINTER_FRAGMENT.fullmatch(s)),
    # OpenAPI formats: ajv-formats checks int32/int64 on numbers only (see ajv_spelled)
    "int32": _always, "int64": _always, "float": _always, "double": _always,
    "password": _always, "binary": _always,
}
_INT_BOUNDS = {"int32": {"minimum": -(2 ** 31), "maximum": 2 ** 31 - 1}, "int64": {}}
# formats jsonschema-rs knows that ajv-formats does not: ajv refuses them as unknown
_NOT_AJV = frozenset({"idn-email", "idn-hostname", "iri", "iri-reference"})
# where draft-07 keeps subschemas: one schema, a list of them, or a map of names to them
_ONE = frozenset({"additionalItems", "items", "contains", "additionalProperties",
                  "propertyNames", "not", "if", "then", "else"})
_LIST = frozenset({"allOf", "anyOf", "oneOf", "items"})
_MAP = frozenset({"properties", "patternProperties", "definitions", "dependencies"})


def ajv_spelled(schema: Any) -> Any:
    """`schema` as ajv reads it, spelled for jsonschema-rs's draft-07: a keyword beside
    `$ref` still applies (`{$ref, required}` is `{allOf: [{$ref}], required}`), ajv-formats'
    number formats (`int32`, `int64`: a whole number, int32 within 32 bits; jsonschema-rs
    checks formats on strings only), and OpenAPI's `nullable: true` beside a `type`. What ajv
    refuses is a ValueError: a format ajv-formats lacks, and its strict mode and meta-schema
    rules (_refused)."""
    if not isinstance(schema, dict):
        return schema
    _refused(schema)
    out = dict(schema)
    for key, sub in schema.items():
        if key in _ONE and isinstance(sub, dict) or key in _LIST and isinstance(sub, list):
            out[key] = [ajv_spelled(s) for s in sub] if isinstance(sub, list) else ajv_spelled(sub)
        elif key in _MAP and isinstance(sub, dict):
            out[key] = {name: ajv_spelled(s) for name, s in sub.items()}
    extra: list = []
    if "$ref" in out and len(out) > 1:
        extra.append({"$ref": out.pop("$ref")})
    fmt = schema.get("format")
    bounds = _INT_BOUNDS.get(fmt) if isinstance(fmt, str) else None
    if bounds is not None:
        extra.append({"if": {"type": "number"}, "then": {"type": "integer", **bounds}})
    if extra:
        out["allOf"] = [*extra, *out.get("allOf", [])]
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if schema.get("nullable") is True and isinstance(kinds, list) and "null" not in kinds:
        out["type"] = [*kinds, "null"]
    return out


def _refused(schema: dict) -> None:
    """What ajv refuses in one schema object: an enum that is empty or repeats a value (its
    draft-07 meta-schema), and, in strict mode, `if` without `then`/`else` (or the reverse),
    `additionalItems` beside no list of `items`, a property that a `patternProperties`
    pattern matches, and a format ajv-formats lacks."""
    from .jsonvalue import same_value

    problems = []
    enum = schema.get("enum")
    if isinstance(enum, list) and (not enum or any(
            same_value(a, b) for i, a in enumerate(enum) for b in enum[i + 1:])):
        problems.append("enum must have at least one item and no duplicate items")
    if "if" in schema and "then" not in schema and "else" not in schema:
        problems.append('"if" without "then" and "else" is ignored')
    problems += [f'"{k}" without "if" is ignored' for k in ("then", "else")
                 if k in schema and "if" not in schema]
    if "additionalItems" in schema and not isinstance(schema.get("items"), list):
        problems.append('"additionalItems" is ignored when "items" is not an array of schemas')
    problems += _matching_properties(schema)
    if schema.get("format") in _NOT_AJV:
        problems.append(f"unknown format {schema['format']!r}")
    if problems:
        raise ValueError(problems[0])


def _matching_properties(schema: dict) -> list[str]:
    """ajv's strict check of `patternProperties`, unless every pattern's schema is `{}` or
    `true`: a property named in `properties` that a pattern (a JavaScript RegExp) matches."""
    from .jsregex import compile_js

    patterns, names = schema.get("patternProperties"), schema.get("properties")
    if not (isinstance(patterns, dict) and isinstance(names, dict)) or all(
            s is True or s == {} for s in patterns.values()):
        return []
    return [f"property {name} matches pattern {pattern} (use allowMatchingProperties)"
            for pattern in patterns for name in map(str, names) if compile_js(pattern).test(name)]


# the `$schema` values ajv's default instance knows; any other is an error there
AJV_DIALECTS = frozenset({"http://json-schema.org/draft-07/schema#",
                          "http://json-schema.org/draft-07/schema"})


class _MultipleOf:
    """ajv's `multipleOf`: a finite number passes when number / divisor, in doubles, is a
    whole number that JavaScript prints without an exponent (below 1e21), so 0.3 is no
    multiple of 0.1 and 2**53 + 1 (read as 2**53) is a multiple of 2."""

    def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list) -> None:
        self.divisor = value

    def validate(self, instance: Any) -> None:
        if isinstance(instance, bool) or not isinstance(instance, (int, float)):
            return
        number = float(instance)
        if math.isinf(number):  # ajv applies number keywords to finite numbers only
            return
        ratio = number / float(self.divisor)
        if not (math.isfinite(ratio) and abs(ratio) < 1e21 and ratio.is_integer()):
            raise ValueError(f"{instance} is not a multiple of {self.divisor}")


class _Annotation:
    """A keyword ajv knows but does not check (`contentEncoding: base64` takes any text)."""

    def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list) -> None:
        pass

    def validate(self, instance: Any) -> None:
        pass


AJV_KEYWORDS: dict[str, Any] = {"multipleOf": _MultipleOf, "contentEncoding": _Annotation,
                                  "contentMediaType": _Annotation}

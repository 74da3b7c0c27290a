"""Structure checks that need a parser: XML (lxml), HTML (html.parser), SQL (sqlglot).

Each runs once per distinct output of a batch (pool.over_distinct_pool), on every core when
a batch holds many distinct outputs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import polars as pl

from .htmlnames import HTML_ELEMENTS
from .pool import over_distinct_pool
from .registry import Ctx, Kind, Value, Verdict, assertion

# --- XML ------------------------------------------------------------------------------------


def _required(value: Any, spec: Any) -> tuple[str, ...]:
    """Required element paths: a comma string, a list, or {requiredElements: [...]}."""
    if value is None or value == "" or value == [] or value == {}:
        return ()
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(","))
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    if isinstance(value, dict) and isinstance(value.get("requiredElements"), list):
        return tuple(str(v) for v in value["requiredElements"])
    raise ValueError("value must be a comma-separated string, a list, or {requiredElements: [...]}")


def _name(el) -> str:
    local = el.tag.rsplit("}", 1)[-1]
    return f"{el.prefix}:{local}" if el.prefix else local


def _is_leaf(el) -> bool:
    return not el.attrib and not any(isinstance(c.tag, str) for c in el)


def _has_path(el, path: list[str]) -> bool:
    """Whether `path` exists in fast-xml-parser's object for the content of `el`."""
    if not path:
        return True
    key, rest = path[0], path[1:]
    if key.startswith("@_"):
        return el.get(key[2:]) is not None and not rest
    if key == "#text":
        return bool((el.text or "").strip()) and not _is_leaf(el) and not rest
    children = [c for c in el if isinstance(c.tag, str) and _name(c) == key]
    if not children:
        return False
    if len(children) > 1:  # an array: the next segment may index it
        if not rest:
            return True
        if not rest[0].isdigit() or str(int(rest[0])) != rest[0] or int(rest[0]) >= len(children):
            return False
        children, rest = [children[int(rest[0])]], rest[1:]
    child = children[0]
    if not rest:
        return True
    return not _is_leaf(child) and _has_path(child, rest)


def _missing(root, required: tuple[str, ...]) -> list[str]:
    out = []
    for path in required:
        parts = path.split(".")
        ok = parts[0] == _name(root) and (len(parts) == 1 or (not _is_leaf(root)
                                                              and _has_path(root, parts[1:])))
        if not ok:
            out.append(path)
    return out


@lru_cache(maxsize=1)
def _lxml():
    """lxml's etree (imported on first use), the strict parser of is-xml and the recovering
    parser of contains-xml (lxml locks a parser shared by threads)."""
    from lxml import etree

    return (etree, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False),
            etree.XMLParser(recover=True, resolve_entities=False, no_network=True))


_DTD_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[")


def xml_check(text: str | None, required: tuple[str, ...]) -> tuple[bool | None, str | None]:
    etree, parser, _ = _lxml()
    if not text or text.isspace():
        return False, "XML parsing failed: empty output"
    if "<!DOCTYPE" in text and _DTD_SUBSET.search(text):
        return False, "DTD internal subsets are not supported by is-xml validation"
    try:
        root = etree.fromstring(text.encode("utf-8"), parser)
    except etree.XMLSyntaxError as e:
        return False, f"XML parsing failed: {e}"
    missing = _missing(root, required)
    if missing:
        return False, f"XML is missing required elements: {', '.join(missing)}"
    return True, None


_TAG = re.compile(r"<(/?)([A-Za-z_:\u00c0-\uffff][\w.\-:\u00b7\u0300-\u036f]*)")


def _tag_end(text: str, start: int) -> int:
    quote = None
    for i in range(start + 1, len(text)):  # row-wise: scanning one output's characters
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "<":
            return -1
        elif c == ">":
            return i
    return -1


def xml_candidates(text: str) -> list[tuple[int, int]]:
    """promptfoo [N]: balanced element spans, siblings grouped, outermost first."""
    stack: list[tuple[str, int]] = []
    found: list[tuple[int, int, int | None]] = []
    i = text.find("<")
    while i >= 0:
        end = i
        m = _TAG.match(text, i)
        if m:
            end = _tag_end(text, i)
            if end < 0:
                end = i
            elif m.group(1):
                if stack and stack[-1][0] == m.group(2):
                    _, start = stack.pop()
                    found.append((start, end + 1, stack[-1][1] if stack else None))
                else:
                    stack.clear()
            elif text[i:end].rstrip().endswith("/"):
                found.append((i, end + 1, stack[-1][1] if stack else None))
            else:
                stack.append((m.group(2), i))
        i = text.find("<", end + 1)
    starts = {s for s, _, _ in found}
    ordered: list[tuple[int, int]] = []
    by_parent: dict[int | None, list[tuple[int, int]]] = {}
    for s, e, parent in found:
        by_parent.setdefault(parent, []).append((s, e))
    for parent, sibs in by_parent.items():
        if len(sibs) > 1 and (parent is None or parent not in starts):
            sibs.sort()
            ordered.append((sibs[0][0], sibs[-1][1]))
    top = sorted(((s, e) for s, e, p in found if p is None or p not in starts),
                 key=lambda t: (t[0], -t[1]))
    return list(dict.fromkeys([*ordered, *top]))


def contains_xml_check(text: str | None, required: tuple[str, ...]
                       ) -> tuple[bool | None, str | None]:
    candidates = xml_candidates(text or "")
    if not candidates:
        return False, "No XML content found in the output"
    etree, _, parser = _lxml()
    containers: list[tuple[int, int]] = []
    for s, e in candidates:
        if any(s >= cs and e <= ce for cs, ce in containers):
            continue
        try:
            root = etree.fromstring(("<r>" + text[s:e] + "</r>").encode("utf-8"), parser)
        except etree.XMLSyntaxError:
            continue
        if root is None:
            continue
        elements = [c for c in root if isinstance(c.tag, str)]
        if any(not _missing(el, required) for el in elements) or (elements and not required):
            return True, None
        containers.append((s, e))
    return False, "No valid XML content found matching the requirements"


def _structure_verdict(ctx: Ctx, check, expect: str, default: Any = None) -> Verdict:
    arg = ctx.prepared if ctx.literal is not None else default
    result = ctx.once(over_distinct_pool(ctx.output, check, arg))
    return Verdict(result.struct.field("ok"), expect, detail=result.struct.field("detail"))


@assertion("is-xml", kind=Kind.DISTINCT, pooled=True,
           value=Value.OPTIONAL, literal_value=True, prepare=_required)
def is_xml(ctx: Ctx) -> Verdict:
    """The whole output is well-formed XML holding the required element paths, if any."""
    return _structure_verdict(ctx, xml_check, "be valid XML", ())


@assertion("contains-xml", kind=Kind.DISTINCT, pooled=True,
           value=Value.OPTIONAL, literal_value=True, prepare=_required)
def contains_xml(ctx: Ctx) -> Verdict:
    """Some balanced XML region of the output parses and holds the required element paths."""
    return _structure_verdict(ctx, contains_xml_check, "contain valid XML", ())


# --- HTML -----------------------------------------------------------------------------------

MAX_HTML = 10 * 1024 * 1024  # promptfoo's input size limit for HTML checks
_WRAPPERS = ("html", "head", "body")
_LITERAL = {t: re.compile(f"<{t}(?=[\\s>/])") for t in _WRAPPERS}
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def html_check(text: str | None, _: Any = None) -> tuple[bool | None, str | None]:
    """promptfoo's rule over an HTML5 parse (lexbor here, parse5 there): no text directly in
    an implied <body>, and at least one recognised element written by the output (an
    html/head/body counts only when the output writes that tag)."""
    from selectolax.lexbor import LexborHTMLParser

    trimmed = (text or "").strip(_JS_SPACE)
    if not trimmed:
        return False, "Output is empty"
    if len(trimmed) > MAX_HTML:
        return False, "Output exceeds maximum size limit"
    if re.match(r"<\?xml", trimmed, re.I):
        return False, "Output appears to be XML, not HTML"
    tree = LexborHTMLParser(trimmed)
    lower = trimmed.lower()
    written = {t for t in _WRAPPERS if _LITERAL[t].search(lower)}
    body = tree.body
    if body is not None and "body" not in written and any(
            n.tag == "-text" and (n.text_content or "").strip(_JS_SPACE)
            for n in body.iter(include_text=True)):
        return False, "Output must be wrapped in HTML tags"
    if not any(t in written if t in _WRAPPERS else (t in HTML_ELEMENTS or "-" in t)
               for t in (n.tag for n in tree.root.traverse())):
        return False, "Output does not contain recognized HTML elements"
    return True, None


@assertion("is-html", kind=Kind.DISTINCT, pooled=True, value=Value.NONE)
def is_html(ctx: Ctx) -> Verdict:
    """The output is an HTML document or fragment: recognised elements, no bare text outside."""
    return _structure_verdict(ctx, html_check, "be valid HTML")


_INDICATORS = [
    (r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>", 1),
    (r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);", 1),
    (r"(?i)<!DOCTYPE\s+html", 2),
    (r"<!--[^-]*(?:-[^-]+)*-->", 1),
    (r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']", 1),
    (r"(?i)<(?:html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button"
     r"|script|style|link|meta|br|hr)\b", 2),
]


@assertion("contains-html", value=Value.NONE)
def contains_html(ctx: Ctx) -> Verdict:
    """The output holds HTML: at least two of promptfoo's indicators (tags, entities, ...)."""
    out = ctx.output
    opening = out.str.contains(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>")
    closing = out.str.contains(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>")
    tags = (pl.when(opening & closing).then(2).when(opening | closing).then(1).otherwise(0))
    points = pl.sum_horizontal(tags, *(out.str.contains(p).cast(pl.Int32) * w
                                       for p, w in _INDICATORS))
    found = (points >= 2) & (out.str.len_chars() <= MAX_HTML)
    return Verdict(found, "contain HTML", detail=pl.format("{} HTML indicators", points))


# --- SQL ------------------------------------------------------------------------------------

DIALECTS = {"athena": "athena", "bigquery": "bigquery", "db2": "postgres", "flinksql": "spark",
            "hive": "hive", "mariadb": "mysql", "mysql": "mysql", "noql": "mysql",
            "postgresql": "postgres", "redshift": "redshift", "snowflake": "snowflake",
            "sqlite": "sqlite", "transactsql": "tsql"}


def _sql_options(value: Any, spec: Any) -> tuple[str, str, tuple[str, ...] | None,
                                                 tuple[str, ...] | None]:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValueError("value must be a mapping {databaseType, allowedTables, allowedColumns}")
    db = str(value.get("databaseType") or "MySQL")
    if db.lower() not in DIALECTS:
        raise ValueError(f"unknown databaseType {db!r}; one of: "
                         + ", ".join(sorted({"MySQL", "PostgresQL", "Sqlite", "BigQuery",
                                             "Snowflake", "TransactSQL", "Hive", "Redshift",
                                             "MariaDB", "Athena", "DB2", "FlinkSQL", "Noql"})))
    lists = []
    for key in ("allowedTables", "allowedColumns"):
        items = value.get(key)
        if items is not None and not (isinstance(items, list)
                                      and all(isinstance(i, str) for i in items)):
            raise ValueError(f"{key} must be a list of strings like 'select::null::users'")
        lists.append(tuple(items) if items is not None else None)
    return db, DIALECTS[db.lower()], lists[0], lists[1]


_MISSING_COMMA = re.compile(
    r"(?i)\bselect\s+(?!distinct\b|all\b|top\b)[A-Za-z_]\w*\s+(?!as\b|from\b)[A-Za-z_]\w*\s+from\b")


def _statement_kind(stmt) -> str:
    from sqlglot import exp

    for kind, cls in (("select", exp.Select), ("insert", exp.Insert), ("update", exp.Update),
                      ("delete", exp.Delete)):
        if isinstance(stmt, cls):
            return kind
    return "select" if isinstance(stmt, (exp.Union, exp.Query)) else type(stmt).__name__.lower()


def _allowed(entry_parts: tuple[str, str, str], rules: tuple[str, ...]) -> bool:
    for rule in rules:
        parts = rule.split("::")
        if len(parts) != 3:
            continue
        if all(re.fullmatch(p, v or "null", re.I) for p, v in zip(parts, entry_parts)):
            return True
    return False


@lru_cache(maxsize=1)
def _STATEMENTS() -> tuple[type, ...]:  # noqa: N802
    from sqlglot import exp

    names = ("Query", "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter",
             "TruncateTable", "Use", "Set", "Transaction", "Commit", "Rollback", "Describe",
             "Show", "Grant", "Analyze", "Copy", "Pragma")
    return tuple(getattr(exp, n) for n in names if hasattr(exp, n))


@lru_cache(maxsize=1)
def _CLAUSES() -> tuple[frozenset, frozenset]:  # noqa: N802
    from sqlglot.tokens import TokenType as T

    after_comma = frozenset({T.FROM, T.WHERE, T.GROUP_BY, T.ORDER_BY, T.HAVING, T.LIMIT,
                             T.R_PAREN, T.SEMICOLON, T.UNION, T.JOIN, T.ON, T.COMMA})
    doubled = frozenset({T.SELECT, T.FROM, T.WHERE, T.GROUP_BY, T.ORDER_BY, T.HAVING, T.LIMIT,
                         T.JOIN, T.ON, T.SET, T.VALUES, T.AND, T.OR})
    return after_comma, doubled


def _loose_tokens(tokens: list, dialect: str) -> bool:
    """What sqlglot parses leniently but node-sql-parser (promptfoo's) rejects: a comma before
    a clause or at the end (`SELECT a, FROM t`, `... FROM t,`), a clause keyword written twice
    (`FROM FROM t`), and `==` outside SQLite."""
    after_comma, doubled = _CLAUSES()
    for token, following in zip(tokens, [*tokens[1:], None]):
        kind = following.token_type if following is not None else None
        if token.text == "," and (kind is None or kind in after_comma):
            return True
        if token.token_type in doubled and kind == token.token_type:
            return True
        if token.text == "==" and dialect != "sqlite":
            return True
    return False


def sql_check(text: str | None, options) -> tuple[bool | None, str | None]:
    import sqlglot
    from sqlglot import exp

    db, dialect, tables, columns = options
    sql = (text or "").strip()
    bad = f"SQL statement does not conform to the provided {db} database syntax."
    if not sql or sql.count("`") % 2 or _MISSING_COMMA.search(sql) or (
            db == "MySQL" and re.search(r"(?i)\bgenerate_series\s*\(", sql)):
        return False, bad
    try:
        reader = sqlglot.Dialect.get_or_raise(dialect)
        tokens = reader.tokenize(sql)
        if _loose_tokens(tokens, dialect):
            return False, bad
        statements = [s for s in reader.parser().parse(tokens, sql) if s is not None]
    except sqlglot.errors.SqlglotError:
        return False, bad
    if not statements or not all(isinstance(s, _STATEMENTS()) for s in statements):
        return False, bad
    if columns is not None:  # "t::table::col" also allows "t::null::col"
        columns_allowed = tuple({*columns, *(f"{a}::null::{c}" for a, _, c in
                                             (r.split("::") for r in columns if r.count("::") == 2))})
    problems = []
    for stmt in statements:
        kind = _statement_kind(stmt)
        if tables is not None:
            found = [(kind, t.db or None, t.name) for t in stmt.find_all(exp.Table)]
            problems += _unauthorized("table(s)", found, tables, tables)
        if columns is not None:
            found = [(kind, c.table or None, c.name) for c in stmt.find_all(exp.Column)]
            problems += _unauthorized("column(s)", found, columns_allowed, columns)
    return (False, " ".join(problems)) if problems else (True, None)


def _unauthorized(what: str, found: list[tuple], allowed: tuple, listed) -> list[str]:
    """promptfoo's message for the references in `found` that `allowed` does not permit."""
    denied = [f"{k}::{scope or 'null'}::{n}" for k, scope, n in found
              if not _allowed((k, scope, n), allowed)]
    if not denied:
        return []
    return [f"SQL references unauthorized {what}. Found: [{', '.join(denied)}]. "
            f"Allowed: [{', '.join(listed)}]."]


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def sql_blocks(text: str) -> list[str]:
    """Bodies of fenced code blocks tagged `sql` or untagged (promptfoo [N])."""
    blocks, active = [], None
    for line in re.split(r"\r\n?|\n", text):
        m = _FENCE.match(line)
        if active is None:
            if m:
                lang = m.group(2).strip().lower()
                active = (m.group(1)[0], len(m.group(1)), lang in ("", "sql"), [])
            continue
        if m and not m.group(2).strip() and m.group(1)[0] == active[0] and len(m.group(1)) >= active[1]:
            if active[2]:
                blocks.append("\n".join(active[3]).strip())
            active = None
        else:
            active[3].append(line)
    return blocks


def contains_sql_check(text: str | None, options) -> tuple[bool | None, str | None]:
    reason = "Output does not contain valid SQL"
    for candidate in sql_blocks(text or "") or [text or ""]:
        if not candidate.strip():
            continue
        ok, why = sql_check(candidate, options)
        if ok:
            return True, None
        reason = why or reason
    return False, reason


@assertion("is-sql", kind=Kind.DISTINCT, pooled=True,
           value=Value.OPTIONAL, literal_value=True, prepare=_sql_options)
def is_sql(ctx: Ctx) -> Verdict:
    """The whole output parses as SQL of `databaseType` (sqlglot), within the allow-lists."""
    return _structure_verdict(ctx, sql_check, "be valid SQL", _sql_options(None, None))


@assertion("contains-sql", kind=Kind.DISTINCT, pooled=True,
           value=Value.OPTIONAL, literal_value=True, prepare=_sql_options)
def contains_sql(ctx: Ctx) -> Verdict:
    """A ```sql fenced block (or the whole output) is valid SQL, within the allow-lists."""
    return _structure_verdict(ctx, contains_sql_check, "contain valid SQL",
                              _sql_options(None, None))

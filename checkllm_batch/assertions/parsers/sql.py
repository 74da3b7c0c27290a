"""SQL checks with a real parser (sqlglot), for is-sql and contains-sql (structure.py), with
promptfoo's dialects (`databaseType`) and table / column allow-lists. Each runs once per
distinct output of a batch, on every core when a batch holds many (Ctx.checked with pooled=True).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# --- SQL ------------------------------------------------------------------------------------

DIALECTS = {"athena": "athena", "bigquery": "bigquery", "db2": "postgres", "flinksql": "spark",
            "hive": "hive", "mariadb": "mysql", "mysql": "mysql", "noql": "mysql",
            "postgresql": "postgres", "redshift": "redshift", "snowflake": "snowflake",
            "sqlite": "sqlite", "transactsql": "tsql"}


def sql_options(value: Any, spec: Any) -> tuple[str, str, tuple[str, ...] | None,
                                                 tuple[str, ...] | None]:
    if value is None or value == "":  # promptfoo: a value JavaScript finds false is none
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
        lists.append(tuple(items) if items else None)  # node-sql-parser: [] checks nothing
    return db, DIALECTS[db.lower()], lists[0], lists[1]


_STANDARD_MODIFIERS = r"(?:all|distinct)"
_MYSQL_MODIFIERS = (r"(?:all|distinct(?:row)?|high_priority|straight_join|sql_(?:big_result|"
                    r"buffer_result|cache|calc_found_rows|no_cache|small_result))")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def _missing_comma(modifiers: str) -> re.Pattern:
    """promptfoo's heuristic for `SELECT a b FROM t` (two bare names: a comma forgotten)."""
    return re.compile(rf"\bselect\s+(?:{modifiers}\s+)*(?!{modifiers}\b){_IDENT}\s+{_IDENT}"
                      r"\s+from\b", re.I | re.A)


_MISSING_COMMA = {"mysql": _missing_comma(_MYSQL_MODIFIERS),
                  "other": _missing_comma(_STANDARD_MODIFIERS)}
_MYSQL_SELECT_OPTIONS = re.compile(rf"(?i)(\bselect\s+(?:{_STANDARD_MODIFIERS}\s+|distinctrow\s+)*)"
                                   r"((?:sql_\w+)\s+)+")
# What node-sql-parser (promptfoo's parser) has no rule for in these dialects, though sqlglot
# reads it in any dialect (each row checked with promptfoo).
_FOREIGN = (
    (re.compile(r"(?i)\bilike\b"), {"MySQL", "MariaDB", "Sqlite", "TransactSQL"}),
    (re.compile(r"(?i)\breturning\b"), {"MySQL", "MariaDB"}),
    (re.compile(r"(?i)\block\s+in\s+share\s+mode\b"), {"*", "-MySQL"}),
    (re.compile(r"(?i)\bselect\s+all\b"), {"*", "-BigQuery"}),
    (re.compile(r"(?i)\bfor\s+update\b|\blimit\s+\d+\s*,"), {"PostgresQL"}),
    (re.compile(r"(?i)\bfetch\s+(?:next|first)\b"), {"*", "-DB2"}),
    (re.compile(r"(?i)\bnulls\s+(?:first|last)\b"), {"*", "-PostgresQL", "-Redshift", "-Snowflake",
                                                      "-Noql"}),
    (re.compile(r"(?i)\blimit\b"), {"DB2"}),
    (re.compile(r"(?i)\bselect\s+top\b"), {"*", "-TransactSQL", "-Snowflake"}),
    # the reserved word `select` as a table name
    (re.compile(r"(?i)\bjoin\s+select\b"), {"*", "-BigQuery", "-Snowflake"}),
    (re.compile(r"(?i)\binto\s+select\b"), {"*", "-BigQuery", "-Snowflake", "-TransactSQL"}),
    (re.compile(r"(?i)^\s*merge\b"), {"*"}),
    (re.compile(r"(?i)\bselect\s+(?:(?:all|distinct|sql_\w+)\s+)*"
                r"(?:all|distinctrow|high_priority|straight_join)\b"), {"MySQL"}),
)


def _foreign(plain: str, db: str) -> bool:
    for pattern, dbs in _FOREIGN:
        applies = ("*" in dbs and f"-{db}" not in dbs) or db in dbs
        if applies and pattern.search(plain):
            return True
    return False


# dialects whose names sqlglot reads in double quotes only (the others read `name` as is, and
# BigQuery, Hive and Spark read "name" as a string)
_DOUBLE_QUOTED = {"PostgresQL", "DB2", "Redshift", "Snowflake", "Athena", "TransactSQL"}
_DELETE_WITHOUT_FROM = re.compile(r"(?i)^\s*delete\s+(?!from\b)")
_QUOTES = (r"(?P<text>'(?:\\[\s\S]?|''|[^'\\])*'?|\"(?:\\[\s\S]?|\"\"|[^\"\\])*\"?"
           r"|`(?:\\[\s\S]?|``|[^`\\])*`?"
           r"|\$(?P<tag>(?:[A-Za-z_][A-Za-z0-9_]*)?)\$[\s\S]*?(?:\$(?P=tag)\$|\Z)")  # $$text$$
_COMMENTS = r"|--[^\r\n]*|#[^\r\n]*|/\*[\s\S]*?(?:\*/|\Z)"
_IGNORED = {False: re.compile(_QUOTES + ")" + _COMMENTS),
            True: re.compile(_QUOTES + r"|\[(?:\]\]|[^\]])*\]?)" + _COMMENTS)}  # [name]


def _plain(sql: str, brackets: bool) -> str:
    """The SQL as promptfoo's heuristics read it, scanned left to right: quoted text (and
    [bracketed] names) as ` ? ` and comments as a space, each to its end or the text's."""
    return _IGNORED[brackets].sub(lambda m: " ? " if m.group("text") is not None else " ", sql)


def _off_dialect(sql: str, db: str) -> bool:
    family = "mysql" if db in ("MySQL", "MariaDB") else "other"
    plain = _plain(sql, brackets=db in ("TransactSQL", "Sqlite"))
    return bool(_MISSING_COMMA[family].search(plain) or _foreign(plain, db)
                or _DELETE_WITHOUT_FROM.search(plain)
                or (db == "Sqlite" and "[" in _plain(sql, brackets=False)))


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
    from sqlglot.tokens import TokenType as T

    after_comma, doubled = _CLAUSES()
    for token, following in zip(tokens, [*tokens[1:], None]):
        kind = following.token_type if following is not None else None
        if token.token_type == T.COMMA and (kind is None or kind in after_comma):
            return True
        if token.token_type in doubled and kind == token.token_type:
            return True
        if token.text == "==" and token.token_type != T.STRING and dialect != "sqlite":
            return True
        if kind is not None and token.token_type == T.FROM and following.text.upper() in \
                ("SELECT", "FROM", "WHERE"):
            return True  # `FROM select`: a reserved word as a table name
    return False


def sql_check(text: str | None, options) -> tuple[bool | None, str | None]:
    import sqlglot
    from sqlglot import exp

    db, dialect, tables, columns = options
    sql = (text or "").strip()
    bad = f"SQL statement does not conform to the provided {db} database syntax."
    if not sql or sql.count("`") % 2 or _off_dialect(sql, db) or (
            db == "MySQL" and re.search(r"(?i)\bgenerate_series\s*\(", sql)):
        return False, bad
    if db in ("MySQL", "MariaDB"):  # SELECT SQL_NO_CACHE ...: options sqlglot does not read
        sql = _MYSQL_SELECT_OPTIONS.sub(r"\1", sql)
    if db in _DOUBLE_QUOTED:  # node-sql-parser reads `name` in every dialect; sqlglot there
        sql = re.sub(r"`([^`]*)`", r'"\1"', sql)  # reads "name"
    try:
        reader = sqlglot.Dialect.get_or_raise(dialect)
        tokens = reader.tokenize(sql)
        if _loose_tokens(tokens, dialect):
            return False, bad
        statements = [s for s in reader.parser().parse(tokens, sql) if s is not None]
    except (sqlglot.errors.SqlglotError, RecursionError):  # nesting too deep: not parsed
        return False, bad
    if not statements and db != "TransactSQL" and not _plain(sql, brackets=False).strip():
        return True, None  # nothing but comments: node-sql-parser reads no statement, no error
    if not statements or not all(isinstance(s, _STATEMENTS()) for s in statements) or any(
            isinstance(s, exp.Select) and not s.expressions for s in statements):
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
            problems += _unauthorized("column(s)", _columns(stmt, kind), columns_allowed,
                                      columns)
    return (False, " ".join(problems)) if problems else (True, None)


def _columns(stmt, kind: str) -> list[tuple]:
    """node-sql-parser's column list: `insert::<table>::c` for an INSERT's columns,
    `update::<qualifier>::c` for a SET target, `delete::<table>::(.*)` for a DELETE,
    `select::...` for every other reference (a WHERE of an UPDATE too), aliases resolved."""
    from sqlglot import exp

    aliases = {t.alias_or_name: t.name for t in stmt.find_all(exp.Table)}
    found, targets = [], set()
    if kind == "insert" and isinstance(stmt.this, exp.Schema):
        table = stmt.this.this.name if isinstance(stmt.this.this, exp.Table) else None
        found += [("insert", table, c.name) for c in stmt.this.expressions]
    if kind == "update":
        for eq in stmt.expressions:
            if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column):
                targets.add(id(eq.this))
                found.append(("update", eq.this.table or None, eq.this.name))
    if isinstance(stmt, exp.Select):  # SELECT *: every column
        found += [("select", aliases.get(e.table, e.table) or None if isinstance(e, exp.Column)
                   else None, "(.*)") for e in stmt.expressions
                  if isinstance(e, exp.Star) or (isinstance(e, exp.Column)
                                                 and isinstance(e.this, exp.Star))]
    if kind == "delete":
        found += [("delete", t.name, "(.*)") for t in stmt.find_all(exp.Table)]
    found += [("select" if kind in ("insert", "update", "delete") else kind,
               aliases.get(c.table, c.table) or None, c.name)
              for c in stmt.find_all(exp.Column) if id(c) not in targets]
    return list(dict.fromkeys(found))


def _unauthorized(what: str, found: list[tuple], allowed: tuple, listed) -> list[str]:
    """promptfoo's message for the references in `found` that `allowed` does not permit."""
    denied = [f"{k}::{scope or 'null'}::{n}" for k, scope, n in found
              if not _allowed((k, scope, n), allowed)]
    if not denied:
        return []
    return [f"SQL references unauthorized {what}. Found: [{', '.join(denied)}]. "
            f"Allowed: [{', '.join(listed)}]."]


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})(.*)$")


def sql_blocks(text: str) -> list[str]:
    """Bodies of fenced code blocks tagged `sql` or untagged (promptfoo [N])."""
    blocks: list[str] = []
    active: tuple[str, int, bool, list[str]] | None = None  # fence char, length, kept, lines
    for line in re.split(r"\r\n?|\n", text):
        m = _FENCE.match(line)
        if active is None:
            if m:
                lang = m.group(2).strip().lower()
                active = (m.group(1)[0], len(m.group(1)), lang in ("", "sql"), [])
            continue
        if m and not m.group(2).strip(" \t") and m.group(1)[0] == active[0] and len(m.group(1)) >= active[1]:
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

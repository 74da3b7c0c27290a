"""The report's HTML pieces: escaped cells and tables of already-worded values, a prompt
named once (its whole text on hover), numbers worded for people (wording.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape

import polars as pl

from .wording import number

PROMPT_CHARS = 48  # of a prompt shown in a cell; the whole on hover


def td(text: object, cls: str | None = None, title: str | None = None, raw: bool = False
       ) -> str:
    """A cell; `raw` text is HTML already (an inline chart), any other is escaped."""
    attrs = (f' class="{cls}"' if cls else "") + (f' title="{escape(title)}"' if title else "")
    body = str(text) if raw else escape("" if text is None else str(text))
    return f"<td{attrs}>{body}</td>"


def html_table(head: Sequence[str], rows: Iterable[str], cls: str | None = None,
               attrs: str = "") -> str:
    """A table of `head` names and rows (each the <td>s of one row, or a whole <tr>)."""
    heads = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(r if r.startswith("<tr") else f"<tr>{r}</tr>" for r in rows)
    return (f'<table{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}{attrs}><thead><tr>'
            f"{heads}</tr></thead><tbody>{body}</tbody></table>")


def shown(value: object) -> str:
    """Any stored value worded for a person."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    return str(value)


def frame_table(frame: pl.DataFrame, classes: dict[str, str] | None = None) -> str:
    """A frame as a table, every value worded for people (numbers right-aligned)."""
    classes = classes or {}
    rows = []
    for row in frame.iter_rows():  # rendering, after all computing is done: few rows
        rows.append("".join(
            td(shown(v), classes.get(name, "num" if isinstance(v, int | float)
                                     and not isinstance(v, bool) else None))
            for name, v in zip(frame.columns, row)))
    return html_table([c.replace("_", " ") for c in frame.columns], rows)


def prompt_cell(prompt: str | None) -> str:
    """A prompt named once, on one line: its start, the whole text on hover."""
    if prompt is None:
        return td("(none)", "prompt")
    one_line = " ".join(prompt.split())
    short = one_line if len(one_line) <= PROMPT_CHARS else one_line[:PROMPT_CHARS - 1] + "…"
    return td(short, "prompt", title=prompt)


def group_name(provider: str | None, prompt: str | None, prompts: int) -> str:
    """A provider (x prompt) as a column head: the provider, and the prompt's start when
    the run has several."""
    name = provider if provider is not None else "(no provider)"
    if prompts <= 1 or prompt is None:
        return name
    one_line = " ".join(prompt.split())
    return f"{name} · {one_line[:20]}{'…' if len(one_line) > 20 else ''}"

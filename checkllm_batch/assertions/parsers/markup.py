"""Markup checks that need a parser (the types are in structure.py): XML (lxml) and HTML
(lexbor, an HTML5 parser), each a check of one output, run once per distinct output of a batch,
on every core when a batch holds many distinct outputs (Ctx.checked with pooled=True).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

from ...js.whitespace import JS_SPACE
from .htmlnames import HTML_ELEMENTS

# --- XML ------------------------------------------------------------------------------------


class _Declaration(NamedTuple):
    """The `<?xml ...?>` declaration, which fast-xml-parser keys like an instruction."""
    target: str
    text: str
    tag: None = None


def _is_node(node) -> bool:
    """Whether fast-xml-parser keys `node`: an element or a processing instruction (lxml's
    have a `target`), not a comment."""
    return isinstance(node.tag, str) or hasattr(node, "target")


def _key(node) -> str:
    if not isinstance(node.tag, str):
        return f"?{node.target}"
    local = node.tag.rsplit("}", 1)[-1]
    return f"{node.prefix}:{local}" if node.prefix else local


_PSEUDO_ATTRIBUTE = re.compile(r"""([^\s=]+)(?:\s*=\s*(?:"[^"]*"|'[^']*'))?""")


def _attributes(node) -> set[str]:
    """An instruction's pseudo-attributes (`version="1.0"`, or a bare name: a boolean)."""
    return {m.group(1) for m in _PSEUDO_ATTRIBUTE.finditer(node.text or "")}


def _children(node) -> list:
    return [c for c in node if _is_node(c)] if isinstance(node.tag, str) else []


def _is_leaf(node) -> bool:
    attributes = node.attrib if isinstance(node.tag, str) else _attributes(node)
    return not attributes and not _children(node)


def _text(el) -> str:
    """An element's own text, as fast-xml-parser joins it: before and between its children,
    an external entity left unexpanded (`&ext;`) included, as promptfoo keeps it."""
    entity = _lxml()[0].Entity
    return (el.text or "") + "".join(((c.text or "") if c.tag is entity else "") + (c.tail or "")
                                     for c in el)


def _has_path(node, path: list[str]) -> bool:
    """Whether `path` exists in fast-xml-parser's object for the content of `node`."""
    if not path:
        return True
    key, rest = path[0], path[1:]
    if key.startswith("@_"):
        if isinstance(node.tag, str):
            return node.get(key[2:]) is not None and not rest
        return key[2:] in _attributes(node) and not rest
    if key == "#text":
        return (isinstance(node.tag, str) and bool(_text(node).strip()) and not _is_leaf(node)
                and not rest)
    return _path_in(_children(node), path)


def _path_in(nodes: list, path: list[str]) -> bool:
    """Whether `path` starts at one of `nodes`, siblings (repeated keys form an array)."""
    key, rest = path[0], path[1:]
    found = [n for n in nodes if _key(n) == key]
    if not found:
        return False
    if len(found) > 1:  # an array: the next segment may index it
        if not rest:
            return True
        if not rest[0].isdigit() or str(int(rest[0])) != rest[0] or int(rest[0]) >= len(found):
            return False
        found, rest = [found[int(rest[0])]], rest[1:]
    if not rest:
        return True
    return not _is_leaf(found[0]) and _has_path(found[0], rest)


def _missing(root, required: tuple[str, ...], declaration: str | None) -> list[str]:
    """The required paths the document lacks: its top level holds the root element, the
    instructions beside it and the XML declaration, if any."""
    top = [n for n in (*reversed(list(root.itersiblings(preceding=True))), root,
                       *root.itersiblings()) if _is_node(n)]
    if declaration is not None:
        top.insert(0, _Declaration("xml", declaration))
    return [path for path in required if not _path_in(top, path.split("."))]


@lru_cache(maxsize=1)
def _lxml():
    """lxml's etree (imported on first use), the strict parser of is-xml and the recovering
    parser of contains-xml (lxml locks a parser shared by threads)."""
    from lxml import etree

    return (etree, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False),
            etree.XMLParser(recover=True, resolve_entities=False, no_network=True))


_DTD_SUBSET = re.compile(r"""<!DOCTYPE(?:[^>\["']|"[^"]*"|'[^']*')*\[""")
_DOCTYPE = re.compile(r"""<!DOCTYPE\s+[^\s>\[]+\s+(?:SYSTEM\s+(["'])(?P<sys>.*?)\1"""
                      r"""|PUBLIC\s+(["'])(?P<pub>.*?)\3\s+(["'])(?P<sys2>.*?)\5)""", re.S)
_PUBLIC_ID = re.compile(r"[\x20\r\na-zA-Z0-9'()+,./:=?;!*#@$_%-]*")
_DECLARATION = re.compile(r"\s*<\?xml(?=[\s?])(.*?)\?>", re.S)


def _bad_doctype(text: str) -> bool:
    """saxes (promptfoo's parser) with promptfoo's checks: a system id may not hold a
    `#fragment`, a public id only the characters XML allows."""
    m = _DOCTYPE.search(text)
    if not m:
        return False
    system = m.group("sys") if m.group("sys") is not None else m.group("sys2")
    public = m.group("pub")
    return "#" in (system or "") or (public is not None and not _PUBLIC_ID.fullmatch(public))


MAX_NESTED = 101  # fast-xml-parser 5 (promptfoo's) refuses an element inside 101 others
_XML_TOKEN = re.compile(r"""<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!(?:[^>"']|"[^"]*"|'[^']*')*>"""
                        r"""|<(/?)(?:[^>"']|"[^"]*"|'[^']*')*?(/?)>""", re.S)


def _too_deep(text: str) -> bool:
    """Whether an element opens more than MAX_NESTED deep (a self-closed `<x/>` does not
    count: fast-xml-parser only checks elements it will wait to see closed)."""
    if text.count("<") <= MAX_NESTED:
        return False
    depth = 0
    for m in _XML_TOKEN.finditer(text):  # row-wise: scanning one output's tags
        if m.group(1) is None or m.group(2):  # comment, CDATA, declaration, `<x/>`
            continue
        depth += -1 if m.group(1) else 1
        if depth > MAX_NESTED:
            return True
    return False


def xml_check(text: str | None, required: tuple[str, ...]) -> tuple[bool | None, str | None]:
    etree, parser, _ = _lxml()
    if not text or text.isspace():
        return False, "XML parsing failed: empty output"
    if "<!DOCTYPE" in text and _DTD_SUBSET.search(text):
        return False, "DTD internal subsets are not supported by is-xml validation"
    if "<!DOCTYPE" in text and _bad_doctype(text):
        return False, "XML parsing failed: Malformed DOCTYPE declaration"
    try:
        root = etree.fromstring(text.encode("utf-8"), parser)
    except etree.XMLSyntaxError as e:
        return False, f"XML parsing failed: {e}"
    if _too_deep(text):
        return False, "XML parsing failed: Maximum nested tags exceeded"
    declared = _DECLARATION.match(text)
    missing = _missing(root, required, declared.group(1) if declared else None)
    if missing:
        return False, f"XML is missing required elements: {', '.join(missing)}"
    return True, None


_NAME_START = (":A-Z_a-z\xc0-\xd6\xd8-\xf6\xf8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c\u200d"
               "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd"
               "\U00010000-\U000effff")
_TAG = re.compile(f"<(/?)([{_NAME_START}][{_NAME_START}\\-.0-9\xb7\u0300-\u036f\u203f\u2040]*)")
_DELIMITED = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"))


def _declaration_end(text: str, start: int) -> int:
    """Where a `<!...>` or `<?...?>` at `start` ends (its last character, else the text's):
    a comment, CDATA or instruction at its closer, else at a `>` outside quotes and [ ]."""
    for opener, closer in _DELIMITED:
        if text.startswith(opener, start):
            found = text.find(closer, start + len(opener))
            return len(text) - 1 if found < 0 else found + len(closer) - 1
    quote, depth = None, 0
    for i in range(start + 2, len(text)):  # row-wise: scanning one output's characters
        c = text[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
        elif c == ">" and not depth:
            return i
    return len(text) - 1


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
        if text.startswith(("<!", "<?"), i):  # skipped whole: no tag inside counts
            end = _declaration_end(text, i)
        elif m:
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
    text = text or ""
    candidates = xml_candidates(text)
    if not candidates:
        return False, "No XML content found in the output"
    etree, _, parser = _lxml()
    containers: list[tuple[int, int]] = []
    for s, e in candidates:
        if any(s >= cs and e <= ce for cs, ce in containers) or _too_deep(text[s:e]):
            continue
        try:
            root = etree.fromstring(("<r>" + text[s:e] + "</r>").encode("utf-8"), parser)
        except etree.XMLSyntaxError:
            continue
        if root is None:
            continue
        elements = [c for c in root if isinstance(c.tag, str)]
        # the region is one object, its elements the keys (repeated names an array)
        if elements and all(_has_path(root, path.split(".")) for path in required):
            return True, None
        containers.append((s, e))
    return False, "No valid XML content found matching the requirements"


# --- HTML -----------------------------------------------------------------------------------

MAX_HTML = 10 * 1024 * 1024  # promptfoo's input size limit for HTML checks
_WRAPPERS = ("html", "head", "body")
# promptfoo looks for them in the lower-cased output: the same matches, at the same places
_LITERAL = {t: re.compile(f"<{t}(?=[\\s>/])", re.I) for t in _WRAPPERS}
# what may come before a tag that starts <html> (or <head>) itself: else the element is implied
_BEFORE = {"html": re.compile(r"(?:\s|<!--.*?-->|<!doctype[^>]*>)*", re.S | re.I),
           "head": re.compile(r"(?:\s|<!--.*?-->|<!doctype[^>]*>|<html(?:[\s/][^>]*)?>)*",
                              re.S | re.I)}
_PROBE = "data-checkllm-probe"


def _written(trimmed: str) -> set[str]:
    """The wrappers (html, head, body) that the output's own tag starts: parse5 gives only
    those a source location. A wrapper tag after content that already implied its element
    (`plain <body>`: the text opened <body>) merges into that element and does not count."""
    from selectolax.lexbor import LexborHTMLParser

    def starts(tag: str, at: int) -> bool:
        if tag in _BEFORE:
            return _BEFORE[tag].fullmatch(trimmed, 0, at) is not None
        before = LexborHTMLParser(trimmed[:at], scripting=True).body
        if before is not None and before.child is not None:
            return False  # <body> was implied before this tag
        probed = LexborHTMLParser(trimmed[:at] + f"<body {_PROBE}>", scripting=True).body
        return probed is not None and _PROBE in probed.attributes  # a tag, not comment text

    return {t for t in _WRAPPERS if any(starts(t, m.start()) for m in _LITERAL[t].finditer(trimmed))}


def html_check(text: str | None, _: Any = None) -> tuple[bool | None, str | None]:
    """promptfoo's rule over an HTML5 parse (lexbor here, parse5 there): no text directly in
    an implied <body>, and at least one recognised element written by the output (an
    html/head/body counts only when the output's own tag starts it)."""
    from selectolax.lexbor import LexborHTMLParser

    trimmed = (text or "").strip(JS_SPACE)
    if not trimmed:
        return False, "Output is empty"
    if len(trimmed) > MAX_HTML:
        return False, "Output exceeds maximum size limit"
    if re.match(r"<\?xml", trimmed, re.I):
        return False, "Output appears to be XML, not HTML"
    tree = LexborHTMLParser(trimmed, scripting=True)  # as parse5 parses <noscript>
    written = _written(trimmed)
    body = tree.body
    if body is not None and "body" not in written and any(
            n.tag == "-text" and (n.text_content or "").strip(JS_SPACE)
            for n in body.iter(include_text=True)):
        return False, "Output must be wrapped in HTML tags"
    root = tree.root  # None only for a document lexbor could not build at all
    if root is None or not any(
            t in written if t in _WRAPPERS else (t in HTML_ELEMENTS or "-" in t)
            for t in (n.tag or "" for n in root.traverse())):
        return False, "Output does not contain recognized HTML elements"
    return True, None

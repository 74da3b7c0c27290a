"""js/jsontext.py: the JSON objects found in free text, as promptfoo finds them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkllm_batch.js import jsontext


def _spans(text: str):
    """Every span extract_json_objects tries: (its start, its text)."""
    for start in (i for i, c in enumerate(text) if c == "{" and i < len(text) - 1):
        end, depth = jsontext._balanced_end(text, start)
        yield start, text[start:end] if end else text[start:start + jsontext.MAX_SPAN] + "}" * depth


@given(st.lists(st.sampled_from(["{", "}", "[", "]", "a", "{}", "}{"]), max_size=300),
       st.integers(0, 150))
@settings(max_examples=300, deadline=None)
def test_counted_depths_end_each_span_where_the_walk_does(parts, extra):
    """The two ways of finding a span's end agree: a walk of the text (few braces) and the
    depths counted once (many); and a span longer than MAX_SPAN stays open, counted."""
    text = "{" * extra + "".join(parts)
    spans = jsontext._Spans(text + "[" * jsontext.MAX_YAML_DEPTH)  # enough to count depths
    for start in (i for i, c in enumerate(text) if c == "{"):
        assert spans.end(start) == jsontext._balanced_end(text, start)


def test_a_span_past_max_span_is_left_open_either_way(monkeypatch):
    monkeypatch.setattr(jsontext, "MAX_SPAN", 50)
    text = "{" * 120 + "}" * 30 + "{a: 1}" * 20
    spans = jsontext._Spans(text)
    assert spans.braces is not None
    for start in range(0, 120, 7):
        assert spans.end(start) == jsontext._balanced_end(text, start)


DEEP = "{a: " * 120 + "1" + "}" * 120


@pytest.mark.parametrize("text", [
    "pre " + DEEP + " post",
    "[{a: " * 60 + "1" + "}]" * 60,
    "{a: [" * 51 + "]}" * 51,     # brackets 102 deep: just past the margin
    "{a: " * 101 + "}" * 101,     # an empty mapping 101 down
])
def test_a_span_judged_too_deep_by_its_brackets_is_one_js_yaml_refuses(text):
    """The shortcut never changes a verdict: each span it skips, the parser refuses too."""
    too_deep = jsontext._Spans(text).too_deep
    skipped = [(start, span) for start, span in _spans(text) if too_deep(start, span)]
    assert skipped
    for _, span in skipped:
        assert jsontext._lenient(span) is None


@pytest.mark.parametrize("text", [
    "{a: " * 100 + "1" + "}" * 100,                # 100 deep: within the margin, parsed
    '{"a": ' * 120 + '"x"' + "}" * 120,            # quoted: brackets could be inside strings
    "{a: '" + "{" * 120 + "'}" + "{b: 1}",        # brackets inside a quoted scalar
    "{a: 1 # " + "{" * 120 + "\n}",                # brackets inside a comment
])
def test_a_span_with_quotes_comments_or_room_is_parsed(text):
    too_deep = jsontext._Spans(text).too_deep
    assert not too_deep(0, next(_spans(text))[1])


def test_thousands_of_nested_braces_find_the_objects_js_yaml_reads():
    """promptfoo's answer (tests/promptfoo_kit/structured-fuzz.jsonl): the first span shallow
    enough to read, with the outer ones refused."""
    found = jsontext.extract_json_objects("pre " + "{a: " * 3000 + "1" + "}" * 3000)
    assert len(found) == 1
    depth, node = 0, found[0]
    while isinstance(node, dict):
        depth, node = depth + 1, node["a"]
    assert (depth, node) == (jsontext.MAX_YAML_DEPTH, 1)


def test_json_nested_past_orjsons_depth_is_refused_as_js_yaml_refuses_it():
    """Strict JSON 1,100 levels deep stops orjson at 1,024; js-yaml stops at 100."""
    deep = '{"a":' * 1100 + "1" + "}" * 1100
    assert jsontext._lenient(deep) is None
    found = jsontext.extract_json_objects("pre " + deep + " post")
    depth, node = 0, found[0]
    while isinstance(node, dict):
        depth, node = depth + 1, node["a"]
    assert (len(found), depth, node) == (1, jsontext.MAX_YAML_DEPTH, 1)
